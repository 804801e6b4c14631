// This file owns starting a DM: naming its people and checking each has
// an account. A DM has no row of its own until its first message, so
// starting one writes nothing.

package service

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/killrchat/killrchat/chat"
)

// StartDM is the canonical address of the DM between me and logins, all
// of whom have accounts. It returns an error wrapping chat.ErrInvalid for
// no login, a malformed login or a wrong number of people, and one
// wrapping chat.ErrNotFound that names the logins without an account;
// the text before the sentinel is a sentence for the person.
func (s *Service) StartDM(ctx context.Context, me string, logins []string) (string, error) {
	if len(logins) == 0 {
		return "", fmt.Errorf("type at least one login: %w", chat.ErrInvalid)
	}
	for _, l := range logins {
		if !chat.ValidName(l) {
			return "", fmt.Errorf("%q is not a login: %w", l, chat.ErrInvalid)
		}
	}
	address, err := chat.DMAddress(append([]string{me}, logins...))
	if err != nil {
		return "", fmt.Errorf("a conversation has %d to %d people, you included: %w", chat.MinDMMembers, chat.MaxDMMembers, chat.ErrInvalid)
	}
	members := strings.Split(address, "+")
	refs, err := s.Storage.UserRefs(ctx, members)
	if err != nil {
		return "", err
	}
	if len(refs) != len(members) {
		var missing []string
		for _, m := range members {
			if !slices.ContainsFunc(refs, func(r chat.UserRef) bool { return r.Login == m }) {
				missing = append(missing, m)
			}
		}
		return "", fmt.Errorf("no one has the login %s: %w", strings.Join(missing, ", "), chat.ErrNotFound)
	}
	return address, nil
}
