// Command killrchat is the KillrChat chat server; package cmd holds its
// configuration and commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/killrchat/killrchat/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := cmd.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
