#!/usr/bin/env bash
# proxy-check.sh nginx|caddy — the reverse-proxy examples of
# docs/operations.md, run: builds killrchat, serves it on a fresh keyspace
# of the Cassandra at $CASSANDRA_HOSTS (default 127.0.0.1), puts nginx or
# Caddy in front on plain HTTP (the documented configuration without its
# TLS lines), and through the proxy signs up, creates a room, opens the
# room's live stream and the personal stream with curl -N, posts, and
# checks that both streams show the message at once (nothing buffered),
# and that an upload of 3 MB goes through and comes back the same. It
# drops its keyspace and stops what it started. A manual recipe, not part of `make test`: it needs nginx or
# caddy (Debian 12: apt-get install nginx caddy).
set -euo pipefail

proxy=${1:?usage: scripts/proxy-check.sh nginx|caddy}
hosts=${CASSANDRA_HOSTS:-127.0.0.1}
app_port=${APP_PORT:-18095}
proxy_port=${PROXY_PORT:-18096}
keyspace=proxycheck_$(date +%s)_$$
work=$(mktemp -d /tmp/killrchat-proxy-check.XXXXXX)
root=$(cd "$(dirname "$0")/.." && pwd)
pids=()

cleanup() {
  local rc=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  (cd "$root" && go run ./scripts/cqlping -host "${hosts%%,*}" -timeout 60s -q -e "DROP KEYSPACE IF EXISTS $keyspace") || true
  [ $rc -eq 0 ] || { echo "--- app log"; tail -20 "$work/app.log" 2>/dev/null || true; echo "--- proxy log"; tail -20 "$work/proxy.log" 2>/dev/null || true; }
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

say() { printf '%s: %s\n' "$proxy" "$*"; }

(cd "$root" && go build -o "$work/killrchat" .)
CASSANDRA_HOSTS=$hosts "$work/killrchat" serve --addr "127.0.0.1:$app_port" --cassandra-keyspace "$keyspace" \
  --trusted-proxies 127.0.0.1/32 --session-key "$(openssl rand -hex 32)" --push-off >"$work/app.log" 2>&1 &
pids+=($!)

case $proxy in
nginx)
  # docs/operations.md's server block, on plain HTTP.
  cat >"$work/nginx.conf" <<EOF
pid $work/nginx.pid;
error_log $work/proxy.log;
events {}
http {
    access_log off;
    client_body_temp_path $work/body;
    proxy_temp_path $work/proxy;
    upstream killrchat {
        server 127.0.0.1:$app_port;
        keepalive 32;
    }
    server {
        listen 127.0.0.1:$proxy_port;
        client_max_body_size 26m;
        location / {
            proxy_pass http://killrchat;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_request_buffering off;
            proxy_read_timeout 60s;
            proxy_send_timeout 60s;
        }
        location ~ /events\$ {
            proxy_pass http://killrchat;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_buffering off;
            proxy_cache off;
            proxy_read_timeout 1h;
        }
    }
}
EOF
  nginx -t -c "$work/nginx.conf" -e "$work/proxy.log" 2>&1 | sed "s/^/$proxy: /"
  nginx -c "$work/nginx.conf" -e "$work/proxy.log" -g 'daemon off;' >>"$work/proxy.log" 2>&1 &
  pids+=($!)
  ;;
caddy)
  # docs/operations.md's Caddyfile, on plain HTTP.
  cat >"$work/Caddyfile" <<EOF
{
    admin off
    auto_https off
}
http://127.0.0.1:$proxy_port {
    request_body {
        max_size 26MB
    }
    reverse_proxy 127.0.0.1:$app_port {
        flush_interval -1
    }
}
EOF
  caddy validate --config "$work/Caddyfile" --adapter caddyfile >"$work/proxy.log" 2>&1 && say "caddy validate: ok"
  XDG_DATA_HOME=$work XDG_CONFIG_HOME=$work caddy run --config "$work/Caddyfile" --adapter caddyfile >>"$work/proxy.log" 2>&1 &
  pids+=($!)
  ;;
*)
  echo "usage: scripts/proxy-check.sh nginx|caddy" >&2
  exit 2
  ;;
esac

base=http://127.0.0.1:$proxy_port
jar=$work/cookies
# Ready: the app's migrations on a fresh keyspace take a while here.
for _ in $(seq 1 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] && break
  sleep 1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] || { say "not ready through the proxy"; exit 1; }
say "ready through the proxy"

csrf() { curl -s -b "$jar" -c "$jar" "$base$1" | grep -o 'name="_csrf" value="[^"]*"' | head -1 | sed 's/.*value="//; s/"$//'; }
post() { # path, then curl form arguments; prints the status
  local path=$1; shift
  curl -s -o /dev/null -w '%{http_code}' -b "$jar" -c "$jar" "$base$path" "$@"
}

login=alice$$
token=$(csrf /signup)
code=$(post /signup --data-urlencode "_csrf=$token" -d "login=$login" -d password=password1 -d password_confirm=password1 \
  -d firstname=Alice -d lastname=Proxy)
[ "$code" = 303 ] || { say "sign-up answered $code"; exit 1; }
room=proxy$$
code=$(post /rooms --data-urlencode "_csrf=$(csrf /rooms/new)" -d "room_name=$room" -d banner=check)
[ "$code" = 303 ] || { say "new room answered $code"; exit 1; }

curl -sN -b "$jar" "$base/rooms/$room/events" >"$work/room.sse" 2>/dev/null &
pids+=($!)
curl -sN -b "$jar" "$base/events?b=proxycheck&c=$room@" >"$work/personal.sse" 2>/dev/null &
pids+=($!)
sleep 2 # both streams subscribed (the server subscribes before it answers)
token=$(csrf "/rooms/$room")
sent=$(date +%s%N)
code=$(post "/rooms/$room/messages" --data-urlencode "_csrf=$token" -d "content=through the $proxy proxy")
[ "$code" = 303 ] || { say "post answered $code"; exit 1; }
for stream in room personal; do
  for _ in $(seq 1 100); do
    grep -q "through the $proxy proxy" "$work/$stream.sse" && break
    sleep 0.05
  done
  grep -q "through the $proxy proxy" "$work/$stream.sse" || { say "the $stream stream did not show the message"; exit 1; }
  say "the $stream stream showed the message $(( ($(date +%s%N) - sent) / 1000000 )) ms after the post was sent (at most)"
done
grep -q '^id: ' "$work/room.sse" && say "the room stream has id: lines"

# An upload streams through (3 MB: three chunks).
head -c 3000000 /dev/urandom >"$work/file.bin"
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$jar" -c "$jar" -F "_csrf=$(csrf "/rooms/$room")" \
  -F "file=@$work/file.bin;filename=file.bin" "$base/rooms/$room/messages")
[ "$code" = 303 ] || { say "upload answered $code"; exit 1; }
href=$(curl -s -b "$jar" "$base/rooms/$room" | grep -o 'href="/files/[^"]*file.bin"' | head -1 | sed 's/href="//; s/"$//')
[ -n "$href" ] || { say "the room shows no file"; exit 1; }
[ "$(curl -s -b "$jar" "$base$href" | sha256sum)" = "$(sha256sum <"$work/file.bin")" ] || { say "the file came back different"; exit 1; }
say "a 3 MB upload went through and came back the same"
say "ok"
