// This file owns how a setting is read: from its flag, else from its
// environment variable, else its default, and turned into a value of the
// configuration or one sentence that names it and says what it accepts.

package cmd

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// setting is one flag of a command, with its environment fallback.
type setting struct {
	name string // the flag, without dashes
	env  string // its environment variable; "" for none
	def  string // the default, as text
	// docDef is the default as the documents show it, when def depends
	// on the machine ("" for def).
	docDef  string
	usage   string
	boolean bool // a flag that needs no value (--push-off)
	// accepts says what the setting takes, completing "--name must be …".
	accepts string
	// set parses the text into the configuration; false: not accepted.
	set func(string) bool
}

// source is where a setting's value came from, as its errors name it.
type source struct {
	text string // the value, as given
	from string // "--name", the environment variable, or "" (the default)
}

// raw holds a flag's text until every setting is read (flag.Value).
type raw struct {
	s   *setting
	val *string
}

func (r raw) String() string {
	if r.s == nil {
		return ""
	}
	return r.s.def
}

func (r raw) Set(v string) error { *r.val = v; return nil }

func (r raw) IsBoolFlag() bool { return r.s != nil && r.s.boolean }

// read gives each setting its value: the flag's when given, else the
// environment's when set and not empty, else the default. It returns
// where each came from, by flag name, or the first setting not accepted.
func read(settings []*setting, flags map[string]string, lookupEnv func(string) (string, bool)) (map[string]source, error) {
	from := map[string]source{}
	for _, s := range settings {
		src := source{text: s.def}
		if v, ok := flags[s.name]; ok {
			src = source{text: v, from: "--" + s.name}
		} else if s.env != "" {
			if v, ok := lookupEnv(s.env); ok && v != "" {
				src = source{text: v, from: s.env}
			}
		}
		from[s.name] = src
		if !s.set(src.text) {
			return nil, notAccepted(s, src)
		}
	}
	return from, nil
}

// notAccepted is the one sentence that says so.
func notAccepted(s *setting, src source) error {
	name := src.from
	if name == "" {
		name = "--" + s.name + "'s default"
	}
	return fmt.Errorf("%s must be %s, not %q", name, s.accepts, src.text)
}

// name is how an error names setting flag: as it was given.
func (src source) name(flag string) string {
	if src.from == "" {
		return "--" + flag
	}
	return src.from
}

// The parsers below make a setting's set function: each stores the value
// it accepts, and refuses the rest.

func text(p *string) func(string) bool {
	return func(v string) bool { *p = v; return true }
}

func boolean(p *bool) func(string) bool {
	return func(v string) bool {
		b, err := strconv.ParseBool(v)
		*p = b
		return err == nil
	}
}

func integer[T int | int64](p *T, least T) func(string) bool {
	return func(v string) bool {
		n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
		*p = T(n)
		return err == nil && T(n) >= least && int64(T(n)) == n
	}
}

// number accepts a finite number that ok accepts.
func number(p *float64, ok func(float64) bool) func(string) bool {
	return func(v string) bool {
		f, err := strconv.ParseFloat(v, 64)
		*p = f
		return err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && ok(f)
	}
}

func duration(p *time.Duration, ok func(time.Duration) bool) func(string) bool {
	return func(v string) bool {
		d, err := time.ParseDuration(v)
		*p = d
		return err == nil && ok(d)
	}
}

func anyDuration(time.Duration) bool        { return true }
func notNegative(d time.Duration) bool      { return d >= 0 }
func positiveDuration(d time.Duration) bool { return d > 0 }

// hostPort accepts host:port (host may be empty) with a numeric port;
// empty when optional.
func hostPort(p *string, optional bool) func(string) bool {
	return func(v string) bool {
		*p = v
		if v == "" {
			return optional
		}
		_, port, err := net.SplitHostPort(v)
		if err != nil {
			return false
		}
		n, err := strconv.Atoi(port)
		return err == nil && n >= 0 && n < 1<<16
	}
}
