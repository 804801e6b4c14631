// This file owns a browser's Web Push subscription: its shape and the
// bounds of its fields. Which addresses a push may go to is the sender's
// policy (package push), decided again when it connects.

package chat

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of a subscription. Push services' endpoints are a few hundred
// bytes (FCM, Mozilla, Apple, WNS); the keys are 87 and 22 characters of
// base64url.
const (
	MaxPushEndpoint = 1000
	maxPushKey      = 128
	// MaxPushSubscriptions is how many browsers one person keeps
	// subscribed; a new one beyond it drops the oldest, so one message
	// makes at most this many requests per person.
	MaxPushSubscriptions = 10
)

// PushSubscription is a browser's push subscription (the Push API's
// endpoint and keys, base64url).
type PushSubscription struct {
	Endpoint, P256dh, Auth string
}

// ParsePushSubscription reads a subscription as a browser posts it
// (spaces around each field are dropped). It returns a MalformedError for
// a field that is not UTF-8 text, and a plain sentence for one out of its
// bounds: an endpoint that is not an absolute http(s) URL without user
// info, of at most MaxPushEndpoint bytes; a p256dh that is not a P-256
// public key (65 bytes, uncompressed) or an auth that is not 16 bytes,
// both base64url.
func ParsePushSubscription(endpoint, p256dh, auth string) (PushSubscription, error) {
	for _, f := range []string{endpoint, p256dh, auth} {
		if !utf8.ValidString(f) {
			return PushSubscription{}, MalformedError("The push subscription is not valid text.")
		}
	}
	sub := PushSubscription{Endpoint: strings.TrimSpace(endpoint), P256dh: strings.TrimSpace(p256dh), Auth: strings.TrimSpace(auth)}
	if err := checkPushEndpoint(sub.Endpoint); err != nil {
		return PushSubscription{}, err
	}
	if k, err := decodeKey(sub.P256dh); err != nil || len(k) != 65 || k[0] != 4 {
		return PushSubscription{}, errors.New("The subscription's p256dh key is not a P-256 public key.")
	}
	if a, err := decodeKey(sub.Auth); err != nil || len(a) != 16 {
		return PushSubscription{}, errors.New("The subscription's auth secret is not 16 bytes.")
	}
	return sub, nil
}

// checkPushEndpoint says why endpoint (valid UTF-8) is not one a
// subscription may name, or nil: see ParsePushSubscription.
func checkPushEndpoint(endpoint string) error {
	if len(endpoint) > MaxPushEndpoint {
		return errors.New("The push endpoint is too long.")
	}
	if strings.IndexFunc(endpoint, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return errors.New("The push endpoint is not a URL.")
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return errors.New("The push endpoint is not a URL.")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return errors.New("A push endpoint must be https.")
	}
	return nil
}

func decodeKey(s string) ([]byte, error) {
	if len(s) > maxPushKey {
		return nil, errors.New("too long")
	}
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.URLEncoding.DecodeString(s)
}
