package httpcore

import "testing"

func TestNewRequest(t *testing.T) {
	for _, c := range []struct {
		url, scheme, authority, path string
	}{
		{"http://127.0.0.1:8080/v1/messages", "http", "127.0.0.1:8080", "/v1/messages"},
		{"https://api.example.com", "https", "api.example.com", "/"},
		{"HTTPS://api.example.com/a?b=c#frag", "https", "api.example.com", "/a?b=c"},
		{"http://h?x=1", "http", "h", "/?x=1"},
		{"http://[::1]:9/p", "http", "[::1]:9", "/p"},
	} {
		r, err := NewRequest("POST", c.url, [][2]string{{"a", "b"}})
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if r.Method != "POST" || r.Scheme != c.scheme || r.Authority != c.authority || r.Path != c.path || len(r.Header) != 1 {
			t.Errorf("%s: %+v", c.url, r)
		}
	}
	for _, bad := range []string{"", "/v1/messages", "example.com/x", "://h/", "http:///path", "http://#x"} {
		if _, err := NewRequest("GET", bad, nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestErrorCodesAndCases(t *testing.T) {
	if got := errorCode(15).Code; got != "HTTP-request-denied" {
		t.Errorf("case 15 is %q", got)
	}
	if got := errorCode(38).Code; got != "internal-error" {
		t.Errorf("case 38 is %q", got)
	}
	if got := errorCode(200).Error(); got != "wasi:http: error-code 200" {
		t.Errorf("an unknown case reads %q", got)
	}
	if methodCase("PATCH") != 8 || methodCase("PROPFIND") != 9 || methodCase("get") != 9 {
		t.Error("method cases")
	}
	if schemeCase("http") != 0 || schemeCase("https") != 1 || schemeCase("ftp") != 2 {
		t.Error("scheme cases")
	}
	r := &Response{Header: [][2]string{{"content-type", "text/plain"}, {"x-a", "1"}, {"x-a", "2"}}}
	if v, ok := r.Get("X-A"); !ok || v != "1" {
		t.Errorf("Get = %q, %v", v, ok)
	}
	if _, ok := r.Get("x-b"); ok {
		t.Error("Get found a field that is not there")
	}
}
