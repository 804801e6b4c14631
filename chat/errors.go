// This file owns the errors every layer shares: the sentinels callers
// compare with errors.Is, and the field-by-field ValidationError.

package chat

import (
	"errors"
	"strings"
)

// Sentinel errors. Callers compare them with errors.Is; the handlers map
// them to HTTP status codes in one place.
var (
	ErrNotFound       = errors.New("not found")
	ErrUserExists     = errors.New("this login is taken")
	ErrRoomExists     = errors.New("this room name is taken")
	ErrNotCreator     = errors.New("only the creator of a room can delete it")
	ErrNotParticipant = errors.New("you are not a participant of this room")
	ErrBadCredentials = errors.New("wrong login or password")
	ErrInvalid        = errors.New("invalid input")
	ErrConflict       = errors.New("too many concurrent changes; try again")
	ErrNotAdmin       = errors.New("only an admin of the room can do that")
	// ErrHandOver refuses a creator's leave while other members remain and
	// none of them is an admin to take the creator role.
	ErrHandOver = errors.New("make another member an admin before you leave")
	// ErrInviteExpired, ErrInviteRevoked and ErrInviteUsedUp say why an
	// invitation link no longer lets anyone in.
	ErrInviteExpired = errors.New("this invitation link has expired")
	ErrInviteRevoked = errors.New("this invitation link was revoked")
	ErrInviteUsedUp  = errors.New("this invitation link has been used up")
	// ErrInviteNotAdmin: the room is closed and whoever made the link is
	// no admin of it (a member's link from while it was open).
	ErrInviteNotAdmin = errors.New("this invitation link was made by someone who may no longer invite to the room")
	// ErrInviteRemoved: an admin removed the person after the link was made.
	ErrInviteRemoved = errors.New("you were removed from the room after this invitation link was made")
	// ErrUnavailable means Cassandra could not be reached or did not answer
	// in time; the request may be retried later.
	ErrUnavailable = errors.New("the database is unavailable")
	// ErrNotAuthor: only the author may edit a message, and only the author
	// or the room's creator may delete it.
	ErrNotAuthor = errors.New("only the author of a message can change it")
	// ErrTooLarge is returned for an upload longer than its limit.
	ErrTooLarge = errors.New("the file is too large")
)

// ErrMalformed is what no browser's form sends (bytes that are not
// UTF-8, a NUL in a file name): the handlers answer 400 with its sentence.
var ErrMalformed = errors.New("malformed request")

// MalformedError is a sentence for a malformed request; errors.Is(err,
// ErrMalformed) holds for it.
type MalformedError string

func (e MalformedError) Error() string { return string(e) }

// Is makes errors.Is(err, ErrMalformed) true.
func (e MalformedError) Is(target error) bool { return target == ErrMalformed }

// ValidationError lists what is wrong with a form, field by field.
// errors.Is(err, ErrInvalid) holds for it.
type ValidationError map[string]string

func (v ValidationError) Error() string {
	parts := make([]string, 0, len(v))
	for field, msg := range v {
		parts = append(parts, field+": "+msg)
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true for a ValidationError.
func (v ValidationError) Is(target error) bool { return target == ErrInvalid }

// Err is v as an error, or nil when v lists no problem.
func (v ValidationError) Err() error {
	if len(v) == 0 {
		return nil
	}
	return v
}
