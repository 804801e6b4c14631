package email

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// UnsubscribeKey is the key of unsubscribe tokens, made from the site's
// session key so that every instance makes the same.
func UnsubscribeKey(sessionKey []byte) []byte {
	k := sha256.Sum256(append([]byte("killrchat unsubscribe\x00"), sessionKey...))
	return k[:]
}

// UnsubscribeToken is login's token in the one-click unsubscribe link:
// the login and its HMAC, so that it needs no row and never expires
// (RFC 8058 links are followed long after the mail).
func UnsubscribeToken(key []byte, login string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(login)) + "." + base64.RawURLEncoding.EncodeToString(mac(key, login))
}

// UnsubscribeLogin is the login of token, if key made it.
func UnsubscribeLogin(key []byte, token string) (string, bool) {
	l, m, ok := strings.Cut(token, ".")
	if !ok {
		return "", false
	}
	login, err := base64.RawURLEncoding.DecodeString(l)
	if err != nil {
		return "", false
	}
	sum, err := base64.RawURLEncoding.DecodeString(m)
	if err != nil || !hmac.Equal(sum, mac(key, string(login))) {
		return "", false
	}
	return string(login), true
}

func mac(key []byte, login string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("unsubscribe\x00" + login))
	return h.Sum(nil)
}
