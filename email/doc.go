// Package email sends the site's mail over SMTP (issue 35): the missed
// message emails, address verification and forgotten passwords, through
// github.com/wneessen/go-mail. Without a host configured it is off, and
// the pages say so. Every header value is checked for CR and LF before
// it reaches the library, and addresses are parsed by the library's
// (net/mail's) parser, so no name, subject or address can add a header.
package email
