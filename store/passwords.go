// This file owns password hashing. bcrypt is slow on purpose, so its work is
// bounded process-wide: a flood of logins queues here instead of taking every
// core from the requests of people already logged in.

package store

import (
	"context"
	"fmt"
	"runtime"

	"github.com/killrchat/killrchat/chat"
	"golang.org/x/crypto/bcrypt"
)

// bcryptSlots bounds concurrent bcrypt work to the cores Go may use.
var bcryptSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// withBcryptSlot runs fn once a slot is free, or returns ctx's error
// (wrapped as chat.ErrUnavailable) if the request ends first.
func withBcryptSlot(ctx context.Context, fn func()) error {
	select {
	case bcryptSlots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("store: waiting to check a password: %w (%w)", chat.ErrUnavailable, ctx.Err())
	}
	defer func() { <-bcryptSlots }()
	fn()
	return nil
}

// hashPassword hashes password at PasswordCost.
func hashPassword(ctx context.Context, password string) (string, error) {
	var (
		hash []byte
		err  error
	)
	if werr := withBcryptSlot(ctx, func() { hash, err = bcrypt.GenerateFromPassword([]byte(password), PasswordCost) }); werr != nil {
		return "", werr
	}
	if err != nil {
		return "", fmt.Errorf("store: hash password: %w", err)
	}
	return string(hash), nil
}

// passwordMatches reports whether password matches hash ("" compares
// against a dummy hash, so an unknown login costs as much as a known one).
func passwordMatches(ctx context.Context, hash, password string) (bool, error) {
	if hash == "" {
		hash = string(dummyHash)
	}
	var ok bool
	if err := withBcryptSlot(ctx, func() {
		ok = bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
	}); err != nil {
		return false, err
	}
	return ok && hash != string(dummyHash), nil
}
