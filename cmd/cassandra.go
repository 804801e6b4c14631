// This file owns how every command reaches Cassandra: the contact
// points, the keyspace, consistency, login and TLS settings, and the
// checks that read the files they name.

package cmd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/killrchat/killrchat/schema"
	"github.com/killrchat/killrchat/store"
)

// Cassandra is how every command reaches the cluster.
type Cassandra struct {
	Hosts []string
	// Port is the CQL port of every node (0: 9042): the one the hosts
	// give, when they give one.
	Port                           int
	Keyspace, Replication, LocalDC string
	Consistency, SerialConsistency string
	Timeout, Speculative           time.Duration
	// CreateKeyspace lets the program create a missing keyspace.
	CreateKeyspace bool
	// Username and Password log in; Password is read from PasswordFile
	// when that is given.
	Username, Password, PasswordFile string
	// TLSOn asks for TLS; TLS is the checked configuration (nil: none).
	TLSOn                  bool
	TLSCA, TLSCert, TLSKey string
	TLSVerifyHost          bool
	TLS                    *tls.Config
}

// Store is the store's configuration for these settings (names already
// checked by Parse).
func (c Cassandra) Store() store.Config {
	cons, _ := store.ParseConsistency(c.Consistency)
	serial, _ := store.ParseSerialConsistency(c.SerialConsistency)
	return store.Config{Hosts: c.Hosts, Port: c.Port, Keyspace: c.Keyspace, Replication: c.Replication,
		Consistency: cons, SerialConsistency: serial, LocalDC: c.LocalDC, Timeout: c.Timeout, Speculative: c.Speculative,
		Username: c.Username, Password: c.Password, TLS: c.TLS, ExistingKeyspace: !c.CreateKeyspace}
}

// checkCassandra checks what spans several Cassandra settings, and reads
// the files they name: the password and the TLS certificates.
func (c *Config) checkCassandra(from map[string]source) error {
	cs := &c.Cassandra
	if cs.PasswordFile != "" {
		name := from["cassandra-password-file"].name("cassandra-password-file")
		if cs.Password != "" {
			return fmt.Errorf("%s and %s both give the password: give one", from["cassandra-password"].name("cassandra-password"), name)
		}
		b, err := os.ReadFile(cs.PasswordFile)
		if err != nil {
			return fmt.Errorf("%s names a file that cannot be read (%v)", name, err)
		}
		cs.Password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if cs.Password == "" {
			return fmt.Errorf("%s names an empty file, %s", name, cs.PasswordFile)
		}
	}
	if cs.Password != "" && cs.Username == "" {
		return errors.New("a Cassandra password is given without --cassandra-username: give both, or neither")
	}
	if cs.Username != "" && cs.Password == "" {
		return errors.New("--cassandra-username is given without a password (--cassandra-password, CASSANDRA_PASSWORD or --cassandra-password-file): give both, or neither")
	}
	cs.TLS = nil
	if !cs.TLSOn && cs.TLSCA == "" && cs.TLSCert == "" && cs.TLSKey == "" {
		return nil
	}
	conf, err := clientTLS(cs.TLSCA, cs.TLSCert, cs.TLSKey, cs.TLSVerifyHost, from)
	cs.TLS = conf
	return err
}

// clientTLS is the TLS configuration of connections to the nodes: the
// authorities in caFile (else the system's), the client certificate if
// given, and the host name checked unless verifyHost is false, when the
// chain alone is verified.
func clientTLS(caFile, certFile, keyFile string, verifyHost bool, from map[string]source) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		name := from["cassandra-tls-ca"].name("cassandra-tls-ca")
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%s names a file that cannot be read (%v)", name, err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s must be a PEM file of certificates, and %s holds none", name, caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--cassandra-tls-cert and --cassandra-tls-key must be given together, or neither")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cassandra-tls-cert and --cassandra-tls-key must be a PEM certificate and its key (%v)", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	if !verifyHost {
		// crypto/tls checks the chain and the name together, or neither:
		// skip both, and check the chain here.
		roots := conf.RootCAs
		conf.InsecureSkipVerify = true
		conf.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	}
	return conf, nil
}

// verifyChain checks that the certificates a node presented chain up to
// roots (nil: the system's), whatever name they give.
func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("the node presented no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(opts)
	return err
}

func (c *Config) cassandraSettings() []*setting {
	cs := &c.Cassandra
	return []*setting{
		{name: "cassandra-hosts", env: "CASSANDRA_HOSTS", def: "127.0.0.1",
			usage:   "Cassandra contact points, comma-separated; a port given with them (host:port, the same for all) is every node's CQL port",
			accepts: "hosts separated by commas, each host or host:port with one port for all",
			set:     c.setHosts},
		{name: "cassandra-keyspace", env: "CASSANDRA_KEYSPACE", def: "killrchat", usage: "the keyspace",
			accepts: "a keyspace name: a letter, then up to 47 letters, digits or underscores",
			set:     func(v string) bool { cs.Keyspace = v; return schema.ValidKeyspace(v) }},
		{name: "cassandra-replication", env: "CASSANDRA_REPLICATION", def: "SimpleStrategy:1",
			usage:   "the keyspace's replication when it is created: SimpleStrategy:RF or NetworkTopologyStrategy:dc1=3,dc2=3",
			accepts: "SimpleStrategy:RF or NetworkTopologyStrategy:dc1=RF,dc2=RF",
			set: func(v string) bool {
				cs.Replication = v
				_, err := schema.ReplicationCQL(v)
				return err == nil
			}},
		{name: "cassandra-consistency", env: "CASSANDRA_CONSISTENCY", def: "LOCAL_QUORUM",
			usage:   "the consistency of reads and writes",
			accepts: "one of ANY, ONE, TWO, THREE, QUORUM, ALL, LOCAL_QUORUM, EACH_QUORUM or LOCAL_ONE",
			set: func(v string) bool {
				cs.Consistency = v
				_, err := store.ParseConsistency(v)
				return err == nil
			}},
		{name: "cassandra-serial-consistency", env: "CASSANDRA_SERIAL_CONSISTENCY", def: "LOCAL_SERIAL",
			usage: "the serial consistency of lightweight transactions", accepts: "SERIAL or LOCAL_SERIAL",
			set: func(v string) bool {
				cs.SerialConsistency = v
				_, err := store.ParseSerialConsistency(v)
				return err == nil
			}},
		{name: "cassandra-dc", env: "CASSANDRA_DC", def: "",
			usage: "the local data centre: its nodes coordinate (LOCAL_QUORUM reads and writes go to its replicas); empty: every node in turn",
			set:   text(&cs.LocalDC)},
		{name: "cassandra-timeout", env: "CASSANDRA_TIMEOUT", def: "5s",
			usage:   "how long a statement, or a connection to a node, may take before it fails",
			accepts: "a duration above 0, such as 5s", set: duration(&cs.Timeout, positiveDuration)},
		{name: "cassandra-speculative", env: "CASSANDRA_SPECULATIVE", def: "200ms",
			usage:   "after this long without an answer, an idempotent statement is sent to a second node too, so that a slow or frozen node does not stall the requests it coordinates; 0: never",
			accepts: "a duration of 0 or more, such as 200ms", set: duration(&cs.Speculative, notNegative)},
		{name: "cassandra-create-keyspace", env: "CASSANDRA_CREATE_KEYSPACE", def: "true", boolean: true,
			usage:   "create the keyspace when it is missing (with --cassandra-replication), as the local node wants; false, as on a managed cluster whose keyspaces an administrator creates: a missing keyspace stops the program with the CREATE KEYSPACE it needs",
			accepts: "true or false", set: boolean(&cs.CreateKeyspace)},
		{name: "cassandra-username", env: "CASSANDRA_USERNAME",
			usage: "the user to log in as, on a cluster that requires a password (PasswordAuthenticator); empty: no login",
			set:   text(&cs.Username)},
		{name: "cassandra-password", env: "CASSANDRA_PASSWORD",
			usage: "that user's password; prefer the environment variable or --cassandra-password-file, which other users of the machine cannot read in the process list",
			set:   text(&cs.Password)},
		{name: "cassandra-password-file", env: "CASSANDRA_PASSWORD_FILE",
			usage: "a file holding that user's password (one line; a final newline is ignored), in place of --cassandra-password",
			set:   text(&cs.PasswordFile)},
		{name: "cassandra-tls", env: "CASSANDRA_TLS", def: "false", boolean: true,
			usage:   "connect to the nodes over TLS, trusting the system's certificate authorities unless --cassandra-tls-ca names one; any --cassandra-tls-* file turns it on",
			accepts: "true or false", set: boolean(&cs.TLSOn)},
		{name: "cassandra-tls-ca", env: "CASSANDRA_TLS_CA",
			usage: "a PEM file of the certificate authorities that sign the nodes' certificates",
			set:   text(&cs.TLSCA)},
		{name: "cassandra-tls-cert", env: "CASSANDRA_TLS_CERT",
			usage: "a PEM client certificate to present, for nodes that require one (require_client_auth), with --cassandra-tls-key",
			set:   text(&cs.TLSCert)},
		{name: "cassandra-tls-key", env: "CASSANDRA_TLS_KEY",
			usage: "the PEM private key of --cassandra-tls-cert",
			set:   text(&cs.TLSKey)},
		{name: "cassandra-tls-verify-host", env: "CASSANDRA_TLS_VERIFY_HOST", def: "true", boolean: true,
			usage:   "check that a node's certificate names the address it is reached at; false checks only that a trusted authority signed it",
			accepts: "true or false", set: boolean(&cs.TLSVerifyHost)},
	}
}

// setHosts reads --cassandra-hosts. gocql reaches the nodes it
// discovers at one port (its ClusterConfig.Port), whatever port the
// contact points name: a port given here is that port.
func (c *Config) setHosts(v string) bool {
	c.Cassandra.Hosts, c.Cassandra.Port = nil, 0
	for _, h := range strings.Split(v, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return false
		}
		port := 0
		if host, p, err := net.SplitHostPort(h); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n >= 1<<16 || host == "" {
				return false
			}
			port = n
		} else if strings.Contains(strings.Trim(h, "[]"), ":") && net.ParseIP(strings.Trim(h, "[]")) == nil {
			return false
		}
		if len(c.Cassandra.Hosts) > 0 && port != c.Cassandra.Port {
			return false
		}
		c.Cassandra.Hosts, c.Cassandra.Port = append(c.Cassandra.Hosts, h), port
	}
	return true
}
