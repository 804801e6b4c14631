package email

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// TLS modes of Config.TLS.
const (
	// STARTTLS upgrades a plain connection and refuses a server that
	// does not offer it (the default).
	STARTTLS = "starttls"
	// Implicit is TLS from the first byte (port 465).
	Implicit = "implicit"
	// Plain sends in the clear: only for a relay on this machine.
	Plain = "none"
)

// Config is how to reach the SMTP server.
type Config struct {
	Host string // "": email is off
	Port int
	// TLS is STARTTLS, Implicit or Plain.
	TLS            string
	User, Password string
	// From is the sender's address, as "Name <addr>" or "addr".
	From string
	// RootCAs, if set, are the authorities the server's certificate is
	// checked against (the system's otherwise).
	RootCAs *x509.CertPool
	// Timeout bounds one connection's dial and each command (default 30 s).
	Timeout time.Duration
}

// On says whether email is configured.
func (c Config) On() bool { return c.Host != "" }

// Check says what is wrong with c, if email is on, in one sentence.
func (c Config) Check() error {
	if !c.On() {
		return nil
	}
	switch c.TLS {
	case STARTTLS, Implicit, Plain:
	default:
		return fmt.Errorf("the SMTP TLS mode must be %s, %s or %s", STARTTLS, Implicit, Plain)
	}
	if c.From == "" {
		return errors.New("an SMTP host needs a From address")
	}
	if _, err := ParseAddress(c.From); err != nil {
		return fmt.Errorf("the From address %q is not an address", c.From)
	}
	if c.Port <= 0 || c.Port >= 1<<16 {
		return fmt.Errorf("the SMTP port must be 1 to 65535, not %d", c.Port)
	}
	return nil
}

// ErrHeader refuses a header value with a CR or LF in it.
var ErrHeader = errors.New("email: a header value holds a line break")

// ParseAddress is addr parsed as one address by net/mail, with no line
// break anywhere; a name in it is kept.
func ParseAddress(addr string) (*mail.Address, error) {
	if strings.ContainsAny(addr, "\r\n") {
		return nil, ErrHeader
	}
	a, err := mail.ParseAddress(addr)
	if err != nil {
		return nil, fmt.Errorf("email: address %q: %w", addr, err)
	}
	if strings.ContainsAny(a.Name, "\r\n") || strings.ContainsAny(a.Address, "\r\n") {
		return nil, ErrHeader
	}
	return a, nil
}

// Mail is one email: To is a bare address; the headers are values
// without line breaks (Send refuses others).
type Mail struct {
	To      string
	Subject string
	Text    string
	HTML    string // "": text only
	// MessageID, InReplyTo and References are ids without their angle
	// brackets ("" for none); References may hold several, space-separated.
	MessageID, InReplyTo, References string
	// Unsubscribe is the https URL of a one-click unsubscribe (RFC 8058).
	Unsubscribe string
	Date        time.Time
}

// Sender sends mails through the configured server.
type Sender struct {
	cfg  Config
	from *mail.Address
}

// New makes a Sender for cfg (which must be on and pass Check).
func New(cfg Config) (*Sender, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if !cfg.On() {
		return nil, errors.New("email: no SMTP host")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	from, err := ParseAddress(cfg.From)
	if err != nil {
		return nil, err
	}
	return &Sender{cfg: cfg, from: from}, nil
}

// Domain is the From address's domain, for message ids.
func (s *Sender) Domain() string {
	_, d, _ := strings.Cut(s.from.Address, "@")
	return d
}

// Error is a refusal of the server or a failure to reach it; Temporary
// says whether trying again later may work (a 4xx answer, a connection
// that failed) or not (a 5xx answer: a refused recipient, a bounce).
type Error struct {
	Temporary bool
	// Server says the failure is the server's, not this mail's: it could
	// not be reached, or did not let the mail begin (no answer to the
	// mail's own commands, or 421, closing), so the next mail would fail
	// alike.
	Server bool
	Code   int
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Permanent says whether err is a refusal that retrying will not change.
func Permanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && !e.Temporary
}

// message builds m as go-mail's message, refusing any header value with a
// line break.
func (s *Sender) message(m Mail) (*gomail.Msg, error) {
	for _, v := range []string{m.To, m.Subject, m.MessageID, m.InReplyTo, m.References, m.Unsubscribe} {
		if strings.ContainsAny(v, "\r\n") {
			return nil, ErrHeader
		}
	}
	to, err := ParseAddress(m.To)
	if err != nil {
		return nil, err
	}
	msg := gomail.NewMsg()
	msg.FromMailAddress(s.from)
	msg.ToMailAddress(to)
	msg.Subject(m.Subject)
	if m.Date.IsZero() {
		msg.SetDate()
	} else {
		msg.SetDateWithValue(m.Date)
	}
	if m.MessageID != "" {
		msg.SetMessageIDWithValue(m.MessageID)
	} else {
		msg.SetMessageID()
	}
	if m.InReplyTo != "" {
		msg.SetGenHeaderPreformatted(gomail.HeaderInReplyTo, "<"+m.InReplyTo+">")
	}
	if m.References != "" {
		refs := strings.Fields(m.References)
		for i := range refs {
			refs[i] = "<" + refs[i] + ">"
		}
		msg.SetGenHeaderPreformatted(gomail.HeaderReferences, strings.Join(refs, " "))
	}
	if m.Unsubscribe != "" {
		msg.SetGenHeaderPreformatted(gomail.HeaderListUnsubscribe, "<"+m.Unsubscribe+">")
		msg.SetGenHeaderPreformatted(gomail.HeaderListUnsubscribePost, "List-Unsubscribe=One-Click")
		msg.SetBulk()
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	return msg, nil
}

// Send sends m and returns the server's answer to it. A mail that
// cannot be built (ErrHeader, a bad address) is sent to no one; a
// server's refusal or an unreachable server is an *Error.
func (s *Sender) Send(ctx context.Context, m Mail) (string, error) {
	msg, err := s.message(m)
	if err != nil {
		return "", err
	}
	opts := []gomail.Option{gomail.WithPort(s.cfg.Port), gomail.WithTimeout(s.cfg.Timeout)}
	tlsCfg := &tls.Config{ServerName: s.cfg.Host, RootCAs: s.cfg.RootCAs, MinVersion: tls.VersionTLS12}
	switch s.cfg.TLS {
	case Implicit:
		opts = append(opts, gomail.WithSSL(), gomail.WithTLSConfig(tlsCfg))
	case Plain:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory), gomail.WithTLSConfig(tlsCfg))
	}
	if s.cfg.User != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(s.cfg.User), gomail.WithPassword(s.cfg.Password))
	}
	c, err := gomail.NewClient(s.cfg.Host, opts...)
	if err != nil {
		return "", &Error{Temporary: false, Err: err}
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return "", classify(err)
	}
	return msg.ServerResponse(), nil
}

// Answered says whether err carries the server's answer to the mail (an
// SMTP reply code).
func Answered(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code != 0
}

// ServerDown says whether err is a failure of the server as a whole
// (see Error.Server), which will pass, if ever, by itself.
func ServerDown(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Temporary && e.Server
}

// classify makes err an *Error: a 5xx answer is permanent, the rest
// (4xx, a connection that failed or timed out) temporary; a failure with
// no answer to the mail's commands (dial, TLS, login, a connection cut),
// or a 421, is the server's.
func classify(err error) *Error {
	var se *gomail.SendError
	if errors.As(err, &se) {
		code := se.ErrorCode()
		temporary := code == 0 || code < 500 || se.IsTemp()
		return &Error{Temporary: temporary, Server: temporary && (code == 0 || code == 421), Code: code, Err: err}
	}
	return &Error{Temporary: true, Server: true, Err: err}
}

// Addr is host:port of c, for logs.
func (c Config) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }
