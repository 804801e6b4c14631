// Writes static/emoji.txt, the emoji picker's data (issue 39), from the
// npm package unicode-emoji-json. Run by hand when Unicode adds emoji:
//
//   cd /tmp && npm pack unicode-emoji-json@0.9.0 && tar xzf unicode-emoji-json-0.9.0.tgz
//   node scripts/emojidata.mjs /tmp/package > static/emoji.txt
//
// unicode-emoji-json-0.9.0.tgz, as used: integrity
// sha512-HdrQW/7SdbXUsTd8uTATv7LvQJkCSgbAgRCDCtOhQ6xn3EAx+xZHQtRniOXWJK3ywIqPegkNhP4U4EbuFsiQng==
//
// The app never fetches emoji data: the picker reads the committed file.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node scripts/emojidata.mjs <unpacked unicode-emoji-json package>");
  process.exit(2);
}
const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const groups = JSON.parse(readFileSync(join(dir, "data-by-group.json"), "utf8"));
let count = 0;
const body = [];
for (const g of groups) {
  body.push("=" + g.name);
  for (const e of g.emojis) {
    if (/[\t\n]/.test(e.name)) throw new Error("a name with a tab or a newline: " + e.name);
    body.push(e.emoji + "\t" + e.name);
    count++;
  }
}
const newest = Math.max(...groups.flatMap((g) => g.emojis.map((e) => parseFloat(e.emoji_version))));
const head = [
  "# KillrChat's emoji picker data: " + count + " emoji (every fully-qualified emoji of Emoji " + newest.toFixed(1) + ",",
  "# without the skin-tone variants), in Unicode's order, by group.",
  "# Source: npm package " + pkg.name + " " + pkg.version + " (data-by-group.json), " + pkg.license + " licence,",
  "#   Copyright (c) 2019 Mu-An Chiou; its data is Unicode's emoji-test.txt, under the Unicode licence",
  "#   (https://www.unicode.org/license.txt).",
  "# Made by scripts/emojidata.mjs; never fetched at run time.",
  "# Format: after this header (its lines start with \"# \"), a line \"=<group>\" starts a group;",
  "# then one line per emoji: the emoji, a tab, its name.",
];
process.stdout.write(head.concat(body).join("\n") + "\n");
