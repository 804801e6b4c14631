package handlers_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

// newBot has the administrator admin create a bot from /admin and
// returns its login and API token, read from the page that shows it
// once.
func newBot(t *testing.T, admin *client) (string, string) {
	t.Helper()
	login := unique("bot")
	p := admin.post("/admin/bots", url.Values{"login": {login}, "firstname": {"Build"}, "lastname": {"Robot"}})
	if p.StatusCode != http.StatusOK {
		t.Fatalf("create bot: %d %s", p.StatusCode, text(p, "main"))
	}
	token, _ := p.doc.Find("#new-token").Attr("value")
	if !chat.WellFormedBotToken(token) {
		t.Fatalf("the page shows no token: %q", token)
	}
	return chat.NameKey(login), token
}

// api makes one request of the bots' API with token ("" for none).
func api(t *testing.T, a *app, method, path, token, contentType string, body io.Reader) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, a.URL+path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: not JSON: %s", method, path, b)
		}
	}
	return resp, out
}

func TestBotAccounts(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil, nil)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	person := a.signedUp(t, unique("per"))

	t.Run("OnlyAdministratorsCreate", func(t *testing.T) {
		p := person.post("/admin/bots", url.Values{"login": {unique("bot")}, "firstname": {"X"}})
		if p.StatusCode != http.StatusNotFound {
			t.Fatalf("a person who is no administrator created a bot: %d", p.StatusCode)
		}
	})
	login, token := newBot(t, admin)
	auditHas(t, admin, admin.login, chat.AuditCreateBot, login)

	t.Run("TokenIsStoredAsHash", func(t *testing.T) {
		sess, err := db.Session()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		var n int
		if err := sess.Query(`SELECT count(*) FROM bot_tokens WHERE token_hash = textAsBlob(?)`, token).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatal("the token is stored as it is")
		}
	})
	t.Run("Me", func(t *testing.T) {
		resp, body := api(t, a, http.MethodGet, "/api/v1/me", token, "", nil)
		if resp.StatusCode != http.StatusOK || body["login"] != login || body["name"] != "Build Robot" {
			t.Fatalf("GET /api/v1/me: %d %v", resp.StatusCode, body)
		}
	})
	t.Run("NoPasswordLogin", func(t *testing.T) {
		for _, pw := range []string{"", "password1", token} {
			c := a.client(t)
			if p := c.post("/login", url.Values{"login": {login}, "password": {pw}}); p.StatusCode == http.StatusSeeOther {
				t.Fatalf("the bot logged in with the password %q", pw)
			}
		}
	})
	t.Run("BadTokens", func(t *testing.T) {
		for name, tok := range map[string]string{"None": "", "Malformed": "abc", "Unknown": chat.BotTokenPrefix + strings.Repeat("A", 43),
			"WrongScheme": ""} {
			req, _ := http.NewRequest(http.MethodGet, a.URL+"/api/v1/me", nil)
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			if name == "WrongScheme" {
				req.Header.Set("Authorization", "Basic "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]string
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || body["error"] == "" {
				t.Errorf("%s: %d %v", name, resp.StatusCode, body)
			}
		}
	})
	t.Run("BotMark", func(t *testing.T) {
		room := createRoom(t, admin)
		if p := admin.post("/rooms/"+room+"/members", url.Values{"login": {login}}); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("add the bot: %d %s", p.StatusCode, text(p, "main"))
		}
		p := admin.get("/rooms/" + room + "/members")
		if mark := p.doc.Find(`[data-login="` + login + `"] .bot-mark, .bot-mark`).First(); strings.TrimSpace(mark.Text()) != "bot" {
			t.Fatalf("the member list shows no bot mark:\n%s", text(p, "main"))
		}
		if n := admin.get("/users/" + person.login).doc.Find(".bot-mark").Length(); n != 0 {
			t.Fatal("a person's profile carries the bot mark")
		}
		if n := admin.get("/users/" + login).doc.Find("h1 .bot-mark").Length(); n != 1 {
			t.Fatal("the bot's profile lacks the bot mark")
		}
	})
	t.Run("RotateAndRevoke", func(t *testing.T) {
		p := admin.post("/admin/bots/"+login+"/rotate", nil)
		fresh, _ := p.doc.Find("#new-token").Attr("value")
		if p.StatusCode != http.StatusOK || !chat.WellFormedBotToken(fresh) || fresh == token {
			t.Fatalf("rotate: %d %q", p.StatusCode, fresh)
		}
		if resp, _ := api(t, a, http.MethodGet, "/api/v1/me", token, "", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the rotated token still works: %d", resp.StatusCode)
		}
		if resp, _ := api(t, a, http.MethodGet, "/api/v1/me", fresh, "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("the new token is refused: %d", resp.StatusCode)
		}
		if p := admin.post("/admin/bots/"+login+"/revoke", nil); p.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke: %d", p.StatusCode)
		}
		if resp, _ := api(t, a, http.MethodGet, "/api/v1/me", fresh, "", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the revoked token still works: %d", resp.StatusCode)
		}
		auditHas(t, admin, admin.login, chat.AuditRevokeBot, login)
	})
	t.Run("BadForm", func(t *testing.T) {
		// Other tests of the package make bots meanwhile: what counts is
		// that none of these logins became one.
		forms := map[string]url.Values{
			"BadLogin": {"login": {"x"}, "firstname": {"A"}},
			"NoName":   {"login": {unique("bot")}},
			"Taken":    {"login": {person.login}, "firstname": {"A"}},
		}
		for name, f := range forms {
			p := admin.post("/admin/bots", f)
			if p.StatusCode != http.StatusUnprocessableEntity && p.StatusCode != http.StatusConflict {
				t.Errorf("%s: %d", name, p.StatusCode)
			}
			if _, ok := p.doc.Find("#new-token").Attr("value"); ok {
				t.Errorf("%s: a token was shown", name)
			}
		}
		after, err := db.Bots(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range after {
			for name, f := range forms {
				if strings.EqualFold(b.Login, f.Get("login")) {
					t.Errorf("%s: a bot %q was stored", name, b.Login)
				}
			}
		}
	})
}

// TestBotTokenRevokedOnEveryInstance: a token both instances have
// cached is refused on both as soon as the revocation answers.
func TestBotTokenRevokedOnEveryInstance(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	admin := a.signedUp(t, unique("adm"))
	makeAdmin(t, db.Store, admin)
	login, token := newBot(t, admin)
	for _, inst := range []*app{a, b} {
		if resp, _ := api(t, inst, http.MethodGet, "/api/v1/me", token, "", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("the token is refused: %d", resp.StatusCode)
		}
	}
	if p := admin.post("/admin/bots/"+login+"/revoke", nil); p.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", p.StatusCode)
	}
	for i, inst := range []*app{a, b} {
		if resp, _ := api(t, inst, http.MethodGet, "/api/v1/me", token, "", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("instance %d still takes the revoked token: %d", i, resp.StatusCode)
		}
	}
}
