package standin_test

import (
	"testing"

	"github.com/agentauth/agentauth/internal/standin"
)

// TestUsersOfTheRealmFile: the users the quick start prints are the realm
// file's, in its order, with the passwords it sets.
func TestUsersOfTheRealmFile(t *testing.T) {
	users, err := standin.Users("../..")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "henry", "ivan"}
	if len(users) != len(want) {
		t.Fatalf("got %d users %v, want %d", len(users), users, len(want))
	}
	for i, u := range users {
		if u.Username != want[i] || u.Password != want[i]+"-pw" {
			t.Errorf("user %d: got %s / %s, want %s / %s-pw", i, u.Username, u.Password, want[i], want[i])
		}
	}
}
