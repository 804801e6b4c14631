// Package accounts is people's accounts over HTTP: sign-up, login and
// logout, profiles (one's own, to edit, and others', as a page or a hover
// card) and password changes.
package accounts
