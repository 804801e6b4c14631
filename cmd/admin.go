// This file owns the admin command: `killrchat admin create-admin
// <login>` (an account made an administrator, created first if there is
// none, with a password printed once), `promote <login>` and `demote
// <login>`, on the configuration every command shares. Demoting the last
// administrator is refused, as on the administration page.

package cmd

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/killrchat/killrchat/chat"
	"github.com/killrchat/killrchat/email"
	"github.com/killrchat/killrchat/store"
)

// The admin command's actions.
const (
	CreateAdmin = "create-admin"
	Promote     = "promote"
	Demote      = "demote"
	// TestEmail sends one mail to an address and prints the SMTP
	// server's answer.
	TestEmail = "test-email"
)

// AdminConfig is what `admin` needs besides Cassandra: the action, the
// login, and the names of an account create-admin makes.
type AdminConfig struct {
	Action, Login       string
	Firstname, Lastname string
	Email               string
}

// take reads the action and the login that come before the flags.
func (a *AdminConfig) take(args []string) []string { return positional(args, &a.Action, &a.Login) }

// positional reads the words that come before the flags into dst, in
// order, and returns the rest of args.
func positional(args []string, dst ...*string) []string {
	for _, d := range dst {
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			*d, args = args[0], args[1:]
		}
	}
	return args
}

func (c *Config) adminSettings() []*setting {
	a := &c.Admin
	return []*setting{
		{name: "firstname", def: "Site", usage: "create-admin: the first name of an account it creates", set: text(&a.Firstname)},
		{name: "lastname", def: "Administrator", usage: "create-admin: the last name of an account it creates", set: text(&a.Lastname)},
		{name: "email", def: "", usage: "create-admin: the email of an account it creates", set: text(&a.Email)},
	}
}

func (c *Config) checkAdmin(from map[string]source) error {
	switch c.Admin.Action {
	case CreateAdmin, Promote, Demote:
	case TestEmail:
		if err := c.checkEmail(from); err != nil {
			return err
		}
		if !c.Email.SMTP.On() {
			return errors.New("admin test-email needs an SMTP server: --smtp-host (SMTP_HOST) and --smtp-from")
		}
		if _, err := email.ParseAddress(c.Admin.Login); err != nil {
			return fmt.Errorf("admin test-email needs an address to send to, not %q", c.Admin.Login)
		}
		return nil
	default:
		return fmt.Errorf("admin needs an action: killrchat admin %s|%s|%s <login>, or %s <address>", CreateAdmin, Promote, Demote, TestEmail)
	}
	if !chat.ValidName(c.Admin.Login) {
		return fmt.Errorf("admin %s needs a login: 3 to 31 letters, digits, '_', '.' or '-', starting with a letter or digit", c.Admin.Action)
	}
	return nil
}

// administer runs `killrchat admin` and returns its exit code.
func administer(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	if cfg.Admin.Action == TestEmail {
		return testEmail(ctx, cfg, stdout, stderr)
	}
	db := store.New(cfg.Cassandra.Store())
	defer db.Close()
	if err := db.Connect(ctx); err != nil {
		fmt.Fprintln(stderr, "admin:", err)
		return 1
	}
	if err := runAdmin(ctx, db, cfg.Admin, stdout); err != nil {
		fmt.Fprintf(stderr, "admin %s %s: %v\n", cfg.Admin.Action, cfg.Admin.Login, sentence(err))
		return 1
	}
	return 0
}

// sentence is what the operator reads for err.
func sentence(err error) string {
	switch {
	case errors.Is(err, chat.ErrLastAdmin):
		return "refused: this is the last administrator; promote someone else first"
	case errors.Is(err, chat.ErrNotFound):
		return "there is no account with this login"
	}
	return err.Error()
}

func runAdmin(ctx context.Context, db *store.Store, a AdminConfig, stdout io.Writer) error {
	login := chat.NameKey(a.Login)
	switch a.Action {
	case CreateAdmin:
		u, err := db.User(ctx, login)
		if errors.Is(err, chat.ErrNotFound) {
			raw := make([]byte, 12)
			if _, err := rand.Read(raw); err != nil {
				return err
			}
			password := base64.RawURLEncoding.EncodeToString(raw)
			if u, err = db.CreateUser(ctx, chat.SignUp{Login: a.Login, Password: password, PasswordConfirm: password,
				Firstname: a.Firstname, Lastname: a.Lastname, Email: a.Email}); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "created the account %s with the password %s (shown once: change it after logging in)\n", u.Login, password)
		} else if err != nil {
			return err
		}
		if err := promote(ctx, db, u, true); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s is an administrator\n", u.Login)
		return db.Audit(ctx, "(command line)", chat.AuditCreateAdmin, u.Login, "")
	case Promote, Demote:
		u, err := db.User(ctx, login)
		if err != nil {
			return err
		}
		if err := promote(ctx, db, u, a.Action == Promote); err != nil {
			return err
		}
		action, says := chat.AuditDemote, "is no longer an administrator"
		if a.Action == Promote {
			action, says = chat.AuditPromote, "is an administrator"
		}
		fmt.Fprintf(stdout, "%s %s\n", u.Login, says)
		return db.Audit(ctx, "(command line)", action, u.Login, "")
	}
	return fmt.Errorf("no action %q", a.Action)
}

// testEmail sends one mail to the address of cfg.Admin.Login and prints
// what the server answered, or why it was not sent.
func testEmail(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	sender, err := email.New(cfg.Email.SMTP)
	if err != nil {
		fmt.Fprintln(stderr, "admin test-email:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	answer, err := sender.Send(ctx, email.Mail{To: cfg.Admin.Login, Subject: "KillrChat test email",
		Text: "This is a test of KillrChat's email settings: the SMTP server " + cfg.Email.SMTP.Addr() + " accepted it.\n"})
	if err != nil {
		fmt.Fprintf(stderr, "admin test-email %s: not sent through %s: %v\n", cfg.Admin.Login, cfg.Email.SMTP.Addr(), err)
		return 1
	}
	fmt.Fprintf(stdout, "sent to %s through %s; the server answered: %s\n", cfg.Admin.Login, cfg.Email.SMTP.Addr(), answer)
	return 0
}

func promote(ctx context.Context, db *store.Store, u chat.User, admin bool) error {
	if admin && !u.Active() {
		return fmt.Errorf("the account is %s: reactivate it first", u.Status)
	}
	_, err := db.SetAdmin(ctx, u.Login, admin)
	return err
}
