// Package emails is the HTTP side of email (issue 35): "forgot your
// password" (GET,POST /forgot: the same answer whoever is asked for,
// limited per client and per login or address), an address's
// verification link (GET,POST /email/verify/:token), a person's email
// settings (POST /profile/email, POST /profile/email/verify to send the
// link again), and the one-click unsubscribe of missed-message emails
// (GET,POST /email/unsubscribe/:token, RFC 8058: the POST needs no
// session and no CSRF token, its token is the proof).
package emails
