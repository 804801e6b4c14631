package web

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// RandomToken is n random bytes, base64url-encoded: session ids and the
// CSRF cookie's visitor id.
func RandomToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
