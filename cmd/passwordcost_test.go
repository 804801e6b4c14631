package cmd_test

import (
	"testing"

	"github.com/killrchat/killrchat/cmd"
	"github.com/killrchat/killrchat/store"
)

// TestPasswordCost: the program hashes passwords at bcrypt cost 10. The
// handler and browser tests lower store.PasswordCost in their TestMain
// (a hash at cost 10 takes seconds under -race); nothing in this package
// does, so this is what a real start, with any flags, uses.
func TestPasswordCost(t *testing.T) {
	cfg, err := cmd.Parse([]string{"serve"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	cmd.NewMain(cfg)
	if store.PasswordCost != 10 {
		t.Fatalf("store.PasswordCost = %d, want the production cost 10", store.PasswordCost)
	}
}
