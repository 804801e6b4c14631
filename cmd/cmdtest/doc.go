// Package cmdtest starts the program in tests as the binary starts it:
// cmd.Main, configured by real flags (and no environment), listening on
// a port of its own on 127.0.0.1.
package cmdtest
