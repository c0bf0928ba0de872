package app

import (
	"bytes"
	"testing"
	"time"
	"unsafe"
)

// TestMCPSessionIDs: a gateway MCP session id opens on any instance with
// the same key, for its server and owner only, until it expires or is
// ended where it is presented; it does not show the server's session id.
func TestMCPSessionIDs(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	here, err := newMCPSessions(key)
	if err != nil {
		t.Fatal(err)
	}
	there, _ := newMCPSessions(key)
	elsewhere, _ := newMCPSessions(bytes.Repeat([]byte{8}, 32))
	now := time.Now()
	id, err := here.add("fs", "agent\x00uma\x00ses_1\x00agt_1", "upstream-session-42")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := here.add("fs", "agent\x00uma\x00ses_1\x00agt_1", "upstream-session-43")
	tampered := []byte(id)
	tampered[len(tampered)/2] ^= 1
	tests := []struct {
		name           string
		s              *mcpSessions
		id, server, ow string
		at             time.Time
		ok             bool
	}{
		{"the instance that opened it", here, id, "fs", "agent\x00uma\x00ses_1\x00agt_1", now, true},
		{"another instance with the key", there, id, "fs", "agent\x00uma\x00ses_1\x00agt_1", now, true},
		{"an instance with another key", elsewhere, id, "fs", "agent\x00uma\x00ses_1\x00agt_1", now, false},
		{"another server", here, id, "gh", "agent\x00uma\x00ses_1\x00agt_1", now, false},
		{"another owner", here, id, "fs", "agent\x00uma\x00ses_1\x00agt_2", now, false},
		{"tampered", here, string(tampered), "fs", "agent\x00uma\x00ses_1\x00agt_1", now, false},
		{"not base64", here, "not an id!", "fs", "agent\x00uma\x00ses_1\x00agt_1", now, false},
		{"expired", there, id, "fs", "agent\x00uma\x00ses_1\x00agt_1", now.Add(mcpSessionMaxAge + time.Minute), false},
	}
	for _, tt := range tests {
		tt.s.now = func() time.Time { return tt.at }
		ms, ok := tt.s.get(tt.id, tt.server, tt.ow)
		if ok != tt.ok || ok && ms.Upstream != "upstream-session-42" {
			t.Errorf("%s: get = %+v, %t; want %t", tt.name, ms, ok, tt.ok)
		}
		tt.s.now = time.Now
	}
	if bytes.Contains([]byte(id), []byte("upstream")) || bytes.Contains([]byte(id), []byte("uma")) {
		t.Errorf("id %q shows what it seals", id)
	}
	ms, _ := here.get(id, "fs", "agent\x00uma\x00ses_1\x00agt_1")
	ctx, release := here.stream(id)
	defer release()
	here.remove(id, ms)
	if _, ok := here.get(id, "fs", "agent\x00uma\x00ses_1\x00agt_1"); ok {
		t.Error("an ended session still opens where it was ended")
	}
	if ctx.Err() == nil {
		t.Error("a stream of the ended session goes on")
	}
	if _, ok := here.get(other, "fs", "agent\x00uma\x00ses_1\x00agt_1"); !ok {
		t.Error("ending one session ended another")
	}

	// The id handed to remove points into a request's header buffer, which
	// the next request overwrites (Fiber's c.Get): the session ended must
	// stay the one named then.
	third, _ := here.add("fs", "agent\x00uma\x00ses_1\x00agt_1", "upstream-session-44")
	ms3, _ := here.get(third, "fs", "agent\x00uma\x00ses_1\x00agt_1")
	buf := []byte(third)
	here.remove(unsafe.String(&buf[0], len(buf)), ms3)
	copy(buf, other)
	if _, ok := here.get(other, "fs", "agent\x00uma\x00ses_1\x00agt_1"); !ok {
		t.Error("a session ended by a header later reused ended the session the buffer names next")
	}
	if _, ok := here.get(third, "fs", "agent\x00uma\x00ses_1\x00agt_1"); ok {
		t.Error("the session ended still opens")
	}
}

// BenchmarkMCPSessionOpen is what opening a sealed session id costs each
// message after initialize (AES-GCM, JSON, the owner's hash).
func BenchmarkMCPSessionOpen(b *testing.B) {
	s, _ := newMCPSessions(bytes.Repeat([]byte{7}, 32))
	owner := "agent\x00uma\x00ses_9ebe8c7789b01a9b5c79137775678d28\x00agt_627160e04f42fc28a7b3baa53c18e910"
	id, _ := s.add("fs", owner, "2f0c6a0e-6c8d-4b56-9d0b-2a7d1f7c9e11")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.get(id, "fs", owner); !ok {
			b.Fatal("does not open")
		}
	}
}
