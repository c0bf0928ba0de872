package centreurl

import "testing"

func TestCheck(t *testing.T) {
	tests := []struct {
		url    string
		wantOK bool
	}{
		{"https://auth.example.com", true},
		{"https://auth.example.com/base/", true},
		{"http://127.0.0.1:8080", true},
		{"http://[::1]:8080", true},
		{"http://localhost:8080", true},
		{"http://auth.example.com", false},
		{"http://10.0.0.1:8080", false},
		{"ftp://auth.example.com", false},
		{"auth.example.com", false},
		{"https://", false},
		{"https://user:pw@auth.example.com", false},
		{"https://auth.example.com/?x=1", false},
		{"https://auth.example.com/#frag", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := Check(tt.url)
			if got := err == nil; got != tt.wantOK {
				t.Errorf("got err=%v, want ok=%v", err, tt.wantOK)
			}
		})
	}
}
