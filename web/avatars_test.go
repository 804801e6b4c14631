package web_test

import (
	"testing"

	"github.com/killrchat/killrchat/web"
)

func TestAvatars(t *testing.T) {
	t.Parallel()
	a := web.NewAvatars()
	if a.Version("ada") != "" {
		t.Fatal("an empty set knows ada")
	}
	a.Replace(map[string]string{"ada": "v1", "bob": "v1"})
	a.Apply(map[string]string{"ada": "v2", "bob": "", "cy": "v1"})
	for login, want := range map[string]string{"ada": "v2", "bob": "", "cy": "v1", "dee": ""} {
		if got := a.Version(login); got != want {
			t.Errorf("Version(%s) = %q, want %q", login, got, want)
		}
	}
	a.Apply(nil)
	a.Replace(map[string]string{"dee": "v3"})
	if a.Version("ada") != "" || a.Version("dee") != "v3" {
		t.Fatal("Replace did not replace the whole set")
	}
}
