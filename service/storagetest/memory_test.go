package storagetest_test

import (
	"testing"

	"github.com/killrchat/killrchat/service/storagetest"
)

// TestMemory holds Memory to the contract store.Store passes on
// Cassandra (store's TestMessagesContract).
func TestMemory(t *testing.T) {
	m := storagetest.NewMemory()
	storagetest.Run(t, func(*testing.T) storagetest.Store { return m })
}
