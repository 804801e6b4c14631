package store_test

import (
	"testing"

	"github.com/killrchat/killrchat/service/storagetest"
)

// TestMessagesContract holds the store's messages to the contract of
// service.Messages, the one the in-memory implementation of the fast
// tier passes too (service/storagetest's TestMemory).
func TestMessagesContract(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(*testing.T) storagetest.Store { return db.Store })
}
