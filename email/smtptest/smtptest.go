// Package smtptest runs a real SMTP server for tests (github.com/emersion/go-smtp):
// STARTTLS or implicit TLS with a certificate of its own authority, AUTH PLAIN
// required before MAIL, and every accepted mail handed to the test. It can
// refuse chosen recipients (a bounce) and be stopped and started again on
// the same port (a server that is down).
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"io"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/killrchat/killrchat/email"
)

// The account the server accepts.
const (
	User     = "killrchat"
	Password = "s3cret-smtp"
)

// Received is one mail the server accepted.
type Received struct {
	From string
	To   []string
	Data []byte
}

// Server is a running SMTP server.
type Server struct {
	Addr     string
	Port     int
	Implicit bool
	CAs      *x509.CertPool
	// CAPEM is the authority's certificate, PEM.
	CAPEM []byte

	tls *tls.Config
	mu  sync.Mutex
	srv *smtp.Server
	// refused recipients get 550; accepted counts every mail accepted.
	refused  map[string]bool
	accepted int
	mails    chan Received
	// stall, when set, holds every DATA unanswered until Stop; stalled
	// counts the mails held.
	stall   chan struct{}
	stalled int
	// hung is the listener of Hang, which answers nothing, and its
	// connections.
	hung      net.Listener
	hungConns []net.Conn
	hungTotal int
}

// Start runs a server with STARTTLS (implicit TLS when implicit) on a
// free loopback port until the test ends.
func Start(t testing.TB, implicit bool) *Server {
	t.Helper()
	s, err := New(implicit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// New runs a server as Start does, outside a test (the load commands):
// the caller stops it.
func New(implicit bool) (*Server, error) {
	s := &Server{Implicit: implicit, refused: map[string]bool{}, mails: make(chan Received, 10_000)}
	if err := s.makeCert(); err != nil {
		return nil, err
	}
	ln, err := s.listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.Addr = ln.Addr().String()
	s.Port = ln.Addr().(*net.TCPAddr).Port
	s.serve(ln)
	return s, nil
}

// Config is the email configuration that reaches this server.
func (s *Server) Config() email.Config {
	mode := email.STARTTLS
	if s.Implicit {
		mode = email.Implicit
	}
	return email.Config{Host: "127.0.0.1", Port: s.Port, TLS: mode, User: User, Password: Password,
		From: "KillrChat <chat@killrchat.test>", RootCAs: s.CAs, Timeout: 5 * time.Second}
}

// Mails are the accepted mails, in order.
func (s *Server) Mails() <-chan Received { return s.mails }

// Next waits up to d for the next mail; false if none came.
func (s *Server) Next(d time.Duration) (Received, bool) {
	select {
	case m := <-s.mails:
		return m, true
	case <-time.After(d):
		return Received{}, false
	}
}

// Accepted is how many mails the server accepted so far.
func (s *Server) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Refuse makes the server answer 550 to the recipient addr.
func (s *Server) Refuse(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[addr] = true
}

// Stall makes the server hold every mail's DATA unanswered until Stop,
// as a server (or a sender) that hangs mid-mail: none is accepted.
func (s *Server) Stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall = make(chan struct{})
}

// Stalled is how many mails are held by Stall.
func (s *Server) Stalled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// Stop closes the server and its connections (a stalled mail is dropped
// unanswered): connections are refused until Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	if s.stall != nil {
		close(s.stall)
		s.stall = nil
	}
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Hang stops the server, as Stop does, and has its port accept
// connections and answer nothing on them, as a server that hangs or a
// network that drops the replies, until Restart: a client waits for its
// own timeout.
func (s *Server) Hang() error {
	s.Stop()
	ln, err := listenAgain(s.Addr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.hung = ln
	s.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.hungConns = append(s.hungConns, c)
			s.hungTotal++
			s.mu.Unlock()
		}
	}()
	return nil
}

// HungConnections is how many connections the port took while it hung,
// over every Hang so far.
func (s *Server) HungConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hungTotal
}

// Restart listens again on the same port (after Stop or Hang).
func (s *Server) Restart() error {
	s.mu.Lock()
	hung, conns := s.hung, s.hungConns
	s.hung, s.hungConns = nil, nil
	s.mu.Unlock()
	if hung != nil {
		_ = hung.Close()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	ln, err := listenAgain(s.Addr)
	if err != nil {
		return err
	}
	if s.Implicit {
		ln = tls.NewListener(ln, s.tls)
	}
	s.serve(ln)
	return nil
}

// listenAgain listens on addr, which a listener just closed may hold a
// moment longer.
func listenAgain(addr string) (net.Listener, error) {
	var (
		ln  net.Listener
		err error
	)
	for range 50 {
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

func (s *Server) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if s.Implicit {
		ln = tls.NewListener(ln, s.tls)
	}
	return ln, nil
}

func (s *Server) serve(ln net.Listener) {
	srv := smtp.NewServer(backend{s})
	srv.Domain = "smtp.killrchat.test"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.MaxMessageBytes = 1 << 20
	srv.MaxRecipients = 10
	if !s.Implicit {
		srv.TLSConfig = s.tls
	}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// makeCert makes an authority and a certificate for 127.0.0.1 signed by it.
func (s *Server) makeCert() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtptest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	s.CAs = x509.NewCertPool()
	s.CAs.AddCert(caCert)
	s.CAPEM = pemBlock("CERTIFICATE", caDER)
	s.tls = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
	return nil
}

func pemBlock(kind string, der []byte) []byte {
	var b bytes.Buffer
	b.WriteString("-----BEGIN " + kind + "-----\n")
	enc := []byte(base64.StdEncoding.EncodeToString(der))
	for len(enc) > 64 {
		b.Write(enc[:64])
		b.WriteByte('\n')
		enc = enc[64:]
	}
	b.Write(enc)
	b.WriteString("\n-----END " + kind + "-----\n")
	return b.Bytes()
}

type backend struct{ s *Server }

func (b backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	_, isTLS := c.TLSConnectionState()
	return &session{s: b.s, tls: isTLS}, nil
}

type session struct {
	s      *Server
	tls    bool
	authed bool
	from   string
	to     []string
}

func (x *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, password string) error {
		if user != User || password != Password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		x.authed = true
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if !x.authed {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "authentication required"}
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	refused := x.s.refused[to]
	x.s.mu.Unlock()
	if refused {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(x.to) == 0 {
		return errors.New("no recipient")
	}
	x.s.mu.Lock()
	stall := x.s.stall
	if stall != nil {
		x.s.stalled++
	}
	x.s.mu.Unlock()
	if stall != nil {
		<-stall
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "shutting down"}
	}
	x.s.mu.Lock()
	x.s.accepted++
	n := x.s.accepted
	x.s.mu.Unlock()
	x.s.mails <- Received{From: x.from, To: x.to, Data: data}
	return &smtp.SMTPError{Code: 250, EnhancedCode: smtp.EnhancedCode{2, 0, 0}, Message: "queued as Q" + strconv.Itoa(n)}
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }
