package views

import (
	"context"
)

type csrfKey struct{}

// WithCSRF returns a context whose forms carry token.
func WithCSRF(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, csrfKey{}, token)
}

func csrfToken(ctx context.Context) string {
	t, _ := ctx.Value(csrfKey{}).(string)
	return t
}
