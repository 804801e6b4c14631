package chat

// SessionRow is a stored login session: whose it is ("" before login) and
// its encoded values, which only the session store reads.
type SessionRow struct {
	Login string
	Data  []byte
}
