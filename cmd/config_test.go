package cmd_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/killrchat/killrchat/cmd"
)

// Files the settings read, made by TestMain.
var emptyFile, passwordFile, caFile, keyFile string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cmdtest")
	if err != nil {
		panic(err)
	}
	emptyFile, passwordFile, caFile = filepath.Join(dir, "empty"), filepath.Join(dir, "password"), filepath.Join(dir, "ca.pem")
	keyFile = filepath.Join(dir, "key.pem")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		panic(err)
	}
	// The CA's certificate and key serve as a client pair too.
	for name, text := range map[string]string{emptyFile: "", passwordFile: "pass word\n",
		caFile:  string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		keyFile: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			panic(err)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// TestParseRefuses: a bad flag or environment value is one sentence that
// names the setting as it was given and says what it accepts.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"MessageRateZero", []string{"--message-rate", "0"}, nil, `--message-rate must be a number above 0, not "0"`},
		{"MessageRateEnvNotANumber", nil, map[string]string{"MESSAGE_RATE": "abc"}, `MESSAGE_RATE must be a number above 0, not "abc"`},
		{"NegativeCacheSize", []string{"--cache-size", "-1"}, nil, `--cache-size must be a whole number of 1 or more, not "-1"`},
		{"NegativeMaxUploadEnv", nil, map[string]string{"MAX_UPLOAD": "-5"}, `MAX_UPLOAD must be a whole number of bytes, 1 or more, not "-5"`},
		{"UnknownConsistency", []string{"--cassandra-consistency", "MOST"}, nil, `--cassandra-consistency must be one of ANY, ONE`},
		{"UnknownSerial", nil, map[string]string{"CASSANDRA_SERIAL_CONSISTENCY": "QUORUM"}, `CASSANDRA_SERIAL_CONSISTENCY must be SERIAL or LOCAL_SERIAL, not "QUORUM"`},
		{"Keyspace", []string{"--cassandra-keyspace", "no-dashes"}, nil, `--cassandra-keyspace must be a keyspace name`},
		{"Replication", []string{"--cassandra-replication", "Simple"}, nil, `--cassandra-replication must be SimpleStrategy:RF or`},
		{"HostsMixedPorts", []string{"--cassandra-hosts", "a:9042,b:9043"}, nil, `--cassandra-hosts must be hosts separated by commas`},
		{"Duration", []string{"--upload-timeout", "10"}, nil, `--upload-timeout must be a duration above 0, such as 10m, not "10"`},
		{"NegativeDuration", []string{"--read-timeout", "-1s"}, nil, `--read-timeout must be a duration of 0 or more`},
		{"Bool", nil, map[string]string{"PUSH_OFF": "yes"}, `PUSH_OFF must be true or false, not "yes"`},
		{"LogLevel", []string{"--log-level", "loud"}, nil, `--log-level must be debug, info, warn or error, not "loud"`},
		{"SessionKeyShort", []string{"--session-key", "abcd"}, nil, `--session-key must be empty, or 64 or more hex digits`},
		{"TrustedProxies", []string{"--trusted-proxies", "10.0.0.1"}, nil, `--trusted-proxies must be CIDRs separated by commas`},
		{"NATSEmbed", []string{"--nats-embed", "localhost"}, nil, `--nats-embed must be empty, or host:port, not "localhost"`},
		{"Port", nil, map[string]string{"PORT": "http"}, `PORT must be host:port, :port or a port, not "http"`},
		{"UploadBudget", []string{"--max-upload", "1000", "--upload-bytes-per-hour", "999"}, nil, `--upload-bytes-per-hour must be at least --max-upload (1000 bytes), not 999`},
		{"DownloadMemory", []string{"--download-memory", "1000"}, nil, `--download-memory must be a whole number of bytes, at least one chunk (1024000), not "1000"`},
		{"VAPIDHalf", []string{"--vapid-public-key", "x"}, nil, `--vapid-public-key and --vapid-private-key must be given together, or neither`},
		{"PushSubject", []string{"--push-subject", "admin@example.com"}, nil, `--push-subject must be empty, or a mailto: or https: URL`},
		{"UnknownFlag", []string{"--bogus"}, nil, `there is no setting --bogus`},
		{"NoValue", []string{"--addr"}, nil, `--addr needs a value`},
		{"Argument", []string{"--addr", ":1", "stray"}, nil, `"stray" is not a setting`},
		{"UnknownCommand", []string{"frobnicate"}, nil, `there is no command "frobnicate": the commands are serve (the default), migrate, index-backfill`},
		{"BackfillUntil", []string{"index-backfill", "--until", "20251340"}, nil, `--until must be 0 or a day as yyyyMMdd, not "20251340"`},
		{"BackfillRate", []string{"index-backfill", "--rate", "-1"}, nil, `--rate must be a number of 0 or more, not "-1"`},
		{"BackfillSharesCassandra", []string{"index-backfill", "--cassandra-consistency", "MOST"}, nil, `--cassandra-consistency must be one of`},
		{"BackfillHasNoServeSettings", []string{"index-backfill", "--message-rate", "5"}, nil, `there is no setting --message-rate`},
		{"MigrateHasNoServeSettings", []string{"migrate", "--migrate=false"}, nil, `there is no setting --migrate`},
		{"LogFormat", []string{"--log-format", "xml"}, nil, `--log-format must be text or json, not "xml"`},
		{"PasswordWithoutUser", nil, map[string]string{"CASSANDRA_PASSWORD": "pw"}, `a Cassandra password is given without --cassandra-username: give both, or neither`},
		{"UserWithoutPassword", []string{"--cassandra-username", "app"}, nil, `--cassandra-username is given without a password`},
		{"TwoPasswords", []string{"--cassandra-username", "app", "--cassandra-password-file", "x"}, map[string]string{"CASSANDRA_PASSWORD": "pw"},
			`CASSANDRA_PASSWORD and --cassandra-password-file both give the password: give one`},
		{"PasswordFileMissing", []string{"migrate", "--cassandra-username", "app", "--cassandra-password-file", "/nonexistent/pw"}, nil,
			`--cassandra-password-file names a file that cannot be read (open /nonexistent/pw: no such file or directory)`},
		{"PasswordFileEmpty", []string{"--cassandra-username", "app"}, map[string]string{"CASSANDRA_PASSWORD_FILE": emptyFile}, `CASSANDRA_PASSWORD_FILE names an empty file`},
		{"CAMissing", []string{"--cassandra-tls-ca", "/nonexistent/ca.pem"}, nil, `--cassandra-tls-ca names a file that cannot be read`},
		{"CANotPEM", nil, map[string]string{"CASSANDRA_TLS_CA": emptyFile}, `CASSANDRA_TLS_CA must be a PEM file of certificates, and ` + emptyFile + ` holds none`},
		{"CertWithoutKey", []string{"--cassandra-tls-cert", "cert.pem"}, nil, `--cassandra-tls-cert and --cassandra-tls-key must be given together, or neither`},
		{"CertNotAPair", []string{"--cassandra-tls-cert", caFile, "--cassandra-tls-key", passwordFile}, nil, `--cassandra-tls-cert and --cassandra-tls-key must be a PEM certificate and its key (`},
		{"VerifyHost", []string{"--cassandra-tls-verify-host=maybe"}, nil, `--cassandra-tls-verify-host must be true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cmd.Parse(tc.args, env(tc.env))
			if err == nil {
				t.Fatalf("accepted; want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to start %q", err, tc.want)
			}
			if strings.Count(err.Error(), ". ") > 0 || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one sentence", err)
			}
		})
	}
}

// TestParseAccepts: flags win over the environment, which wins over the
// defaults; every setting reaches the configuration.
func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		check func(cmd.Config) bool
	}{
		{"Defaults", nil, nil, func(c cmd.Config) bool {
			s := c.Serve
			return c.Command == cmd.Serve && s.Addr == ":8080" && s.MessageRate == 5 && s.MessageBurst == 20 &&
				s.SearchIndex && !s.PushOff && s.SessionKey == nil && c.Cassandra.Keyspace == "killrchat" &&
				c.Cassandra.Consistency == "LOCAL_QUORUM" && c.Cassandra.Speculative == 200*time.Millisecond &&
				s.HTTP.ReadHeaderTimeout == 5*time.Second && len(c.Cassandra.Hosts) == 1 && c.Cassandra.Port == 0
		}},
		{"EnvFallback", nil, map[string]string{"MESSAGE_RATE": "2.5", "PORT": "9000", "SEARCH_INDEX": "false"}, func(c cmd.Config) bool {
			return c.Serve.MessageRate == 2.5 && c.Serve.Addr == ":9000" && !c.Serve.SearchIndex
		}},
		{"EmptyEnvIsUnset", nil, map[string]string{"MESSAGE_RATE": ""}, func(c cmd.Config) bool { return c.Serve.MessageRate == 5 }},
		{"FlagWins", []string{"--message-rate", "7"}, map[string]string{"MESSAGE_RATE": "abc"}, func(c cmd.Config) bool { return c.Serve.MessageRate == 7 }},
		{"BoolFlag", []string{"--push-off", "--secure-cookies=true"}, nil, func(c cmd.Config) bool { return c.Serve.PushOff && c.Serve.SecureCookies }},
		{"HostsWithPort", []string{"--cassandra-hosts", "127.0.0.2:19042, 127.0.0.3:19042"}, nil, func(c cmd.Config) bool {
			return c.Cassandra.Port == 19042 && len(c.Cassandra.Hosts) == 2 && c.Cassandra.Store().Port == 19042
		}},
		{"ReadHeaderTimeout", []string{"--read-timeout", "2s"}, nil, func(c cmd.Config) bool { return c.Serve.HTTP.ReadHeaderTimeout == 2*time.Second }},
		{"SessionKey", []string{"--session-key", strings.Repeat("ab", 32)}, nil, func(c cmd.Config) bool { return len(c.Serve.SessionKey) == 32 }},
		{"TrustedProxies", []string{"--trusted-proxies", "10.0.0.0/8, 192.168.0.0/16"}, nil, func(c cmd.Config) bool { return len(c.Serve.TrustedProxies) == 2 }},
		{"ServeByName", []string{"serve", "--addr", "127.0.0.1:0"}, nil, func(c cmd.Config) bool { return c.Command == cmd.Serve && c.Serve.Addr == "127.0.0.1:0" }},
		{"Backfill", []string{"index-backfill", "--job", "again", "--until", "20250102"}, map[string]string{"CASSANDRA_KEYSPACE": "other"}, func(c cmd.Config) bool {
			return c.Command == cmd.IndexBackfill && c.Backfill.Job == "again" && c.Backfill.Until == 20250102 && c.Backfill.Rate == 500 &&
				c.Cassandra.Keyspace == "other"
		}},
		{"Migrate", []string{"migrate", "--cassandra-create-keyspace=false", "--log-format", "json"}, nil, func(c cmd.Config) bool {
			return c.Command == cmd.Migrate && !c.Cassandra.CreateKeyspace && c.LogFormat == "json" && c.Cassandra.Store().ExistingKeyspace
		}},
		{"ServeDefaults", nil, nil, func(c cmd.Config) bool {
			return c.Serve.Migrate && c.Cassandra.CreateKeyspace && c.LogFormat == "text" && c.Cassandra.TLS == nil &&
				c.Cassandra.Store().Username == "" && !c.Cassandra.Store().ExistingKeyspace
		}},
		{"NoMigrate", []string{"--migrate=false"}, nil, func(c cmd.Config) bool { return !c.Serve.Migrate }},
		{"PasswordFromEnv", []string{"--cassandra-username", "app"}, map[string]string{"CASSANDRA_PASSWORD": "s3cret"}, func(c cmd.Config) bool {
			sc := c.Cassandra.Store()
			return sc.Username == "app" && sc.Password == "s3cret"
		}},
		{"PasswordFile", []string{"migrate", "--cassandra-password-file", passwordFile}, map[string]string{"CASSANDRA_USERNAME": "app"}, func(c cmd.Config) bool {
			return c.Cassandra.Store().Password == "pass word"
		}},
		{"TLSWithSystemRoots", []string{"--cassandra-tls"}, nil, func(c cmd.Config) bool {
			return c.Cassandra.TLS != nil && c.Cassandra.TLS.RootCAs == nil && !c.Cassandra.TLS.InsecureSkipVerify
		}},
		{"TLSCAAlone", []string{"--cassandra-tls-ca", caFile}, nil, func(c cmd.Config) bool {
			tc := c.Cassandra.Store().TLS
			return tc != nil && tc.RootCAs != nil && !tc.InsecureSkipVerify && tc.VerifyPeerCertificate == nil
		}},
		{"ClientCertificate", []string{"--cassandra-tls-cert", caFile, "--cassandra-tls-key", keyFile}, nil, func(c cmd.Config) bool {
			return c.Cassandra.TLS != nil && len(c.Cassandra.TLS.Certificates) == 1
		}},
		{"TLSNoHostCheck", []string{"--cassandra-tls-ca", caFile, "--cassandra-tls-verify-host=false"}, nil, func(c cmd.Config) bool {
			// Skipping crypto/tls's check, the chain is checked instead.
			tc := c.Cassandra.TLS
			return tc != nil && tc.InsecureSkipVerify && tc.VerifyPeerCertificate != nil
		}},
		{"VersionDespiteBadEnv", []string{"--version"}, map[string]string{"MESSAGE_RATE": "abc"}, func(c cmd.Config) bool { return c.ShowVersion }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cmd.Parse(tc.args, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("%+v", c)
			}
		})
	}
	if _, err := cmd.Parse([]string{"--help"}, env(nil)); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}
}

// TestExecuteExitCodes: the program says what is wrong in one line and
// exits non-zero; --version prints the version.
func TestExecuteExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"--message-rate", "0"}, 2, "", "killrchat: --message-rate must be a number above 0, not \"0\".\n"},
		{[]string{"--version"}, 0, "killrchat " + cmd.Version, ""},
		{[]string{"index-backfill", "--help"}, 0, "--job", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := cmd.Execute(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || stderr.String() != tc.stderr && tc.stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestLogFormat: --log-format json writes one JSON object a line, text
// writes key=value.
func TestLogFormat(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		c, err := cmd.Parse([]string{"--log-format", format}, env(nil))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		c.Logger(&b).Info("hello", "addr", ":8080")
		var line map[string]any
		err = json.Unmarshal(b.Bytes(), &line)
		switch {
		case format == "json" && (err != nil || line["msg"] != "hello" || line["addr"] != ":8080" || line["level"] != "INFO"):
			t.Errorf("json: %q (%v)", b.String(), err)
		case format == "text" && (err == nil || !strings.Contains(b.String(), `level=INFO msg=hello addr=:8080`)):
			t.Errorf("text: %q", b.String())
		}
	}
}
