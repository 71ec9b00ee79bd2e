package peers

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	ok := `{"version":1,"router":"r1","seq":7,"replicas":[{"replica":"a/vllm","in_flight":2,"in_flight_tokens":900,"prefill_tokens":400}]}`
	many := `{"version":1,"router":"r1","seq":1,"replicas":[` + strings.Repeat(`{"replica":"x"},`, MaxReplicas) + `{"replica":"y"}]}`
	cases := []struct {
		name, body, err string
	}{
		{"valid", ok, ""},
		{"no replicas", `{"version":1,"router":"r1","seq":1,"replicas":[]}`, ""},
		{"not json", `{"version":1,`, "unexpected EOF"},
		{"unknown field", `{"version":1,"router":"r1","seq":1,"replicas":[],"extra":1}`, `unknown field "extra"`},
		{"trailing data", ok + `{}`, "data after the message"},
		{"other version", `{"version":3,"router":"r1","seq":1}`, "version 3: this router speaks versions 1 to 2"},
		{"version 0", `{"version":0,"router":"r1","seq":1}`, "version 0: this router speaks"},
		{"tenants", `{"version":2,"router":"r1","seq":1,"replicas":[],"tenants":[{"tenant":"a","requests":5,"tokens":900,"in_flight":1,"streams":1}]}`, ""},
		{"tenants in version 1", `{"version":1,"router":"r1","seq":1,"replicas":[],"tenants":[{"tenant":"a"}]}`, "tenants need version 2"},
		{"empty tenant", `{"version":2,"router":"r1","tenants":[{"tenant":""}]}`, "tenants[0]: name must have 1 to 512 bytes"},
		{"duplicate tenant", `{"version":2,"router":"r1","tenants":[{"tenant":"a"},{"tenant":"a"}]}`, `tenants[1]: tenant "a" listed twice`},
		{"negative total", `{"version":2,"router":"r1","tenants":[{"tenant":"a","tokens":-1}]}`, `tenant "a": requests 0 and tokens -1`},
		{"huge total", `{"version":2,"router":"r1","tenants":[{"tenant":"a","requests":9007199254740993}]}`, `tenant "a": requests 9007199254740993`},
		{"negative streams", `{"version":2,"router":"r1","tenants":[{"tenant":"a","streams":-2}]}`, `tenant "a": in_flight 0 and streams -2`},
		{"tenant unknown field", `{"version":2,"router":"r1","tenants":[{"tenant":"a","rps":1}]}`, `unknown field "rps"`},
		{"no router", `{"version":1,"seq":1}`, "router id must have 1 to 512 bytes, has 0"},
		{"empty replica id", `{"version":1,"router":"r1","replicas":[{"replica":""}]}`, "replicas[0]: id must have"},
		{"duplicate replica", `{"version":1,"router":"r1","replicas":[{"replica":"a"},{"replica":"a"}]}`, `replicas[1]: replica "a" listed twice`},
		{"negative count", `{"version":1,"router":"r1","replicas":[{"replica":"a","in_flight":-1}]}`, `replica "a": in_flight -1 out of range`},
		{"huge count", `{"version":1,"router":"r1","replicas":[{"replica":"a","prefill_tokens":2000000000}]}`, `replica "a": prefill_tokens 2000000000 out of range`},
		{"wrong type", `{"version":1,"router":"r1","replicas":[{"replica":"a","in_flight":"3"}]}`, "cannot unmarshal string"},
		{"too many replicas", many, fmt.Sprintf("%d replicas: at most %d", MaxReplicas+1, MaxReplicas)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, err := Decode(strings.NewReader(c.body))
			if c.err == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if m.Router != "r1" || m.Version < MinVersion || m.Version > Version {
					t.Fatalf("decoded %+v", m)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Decode error %v; want one containing %q", err, c.err)
			}
			if !strings.HasPrefix(err.Error(), "peer load: ") {
				t.Errorf("error %q does not say it is about a peer load", err)
			}
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	m := Message{Version: Version, Router: "r", Seq: 3, Replicas: []Replica{{ID: "a", InFlight: 1, InFlightTokens: 2, PrefillTokens: 3}, {ID: "b"}},
		Tenants: []Tenant{{Name: "t", Requests: 4, Tokens: 5, InFlight: 6, Streams: 7}}}
	body, err := m.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip gave %+v; want %+v", got, m)
	}
}

// FuzzDecode: Decode never panics, and what it accepts is valid and
// survives encoding and decoding unchanged.
func FuzzDecode(f *testing.F) {
	f.Add(`{"version":1,"router":"r1","seq":7,"replicas":[{"replica":"a/vllm","in_flight":2}]}`)
	f.Add(`{"version":1,"router":"r1","replicas":[{"replica":"a"},{"replica":"a"}]}`)
	f.Add(`{"version":1,"router":"","seq":18446744073709551615}`)
	f.Add(`{"version":2,"router":"r1","seq":2,"replicas":[],"tenants":[{"tenant":"a","requests":5,"tokens":900,"in_flight":1,"streams":1}]}`)
	f.Add(`{"version":2,"router":"r1","tenants":[]}`)
	f.Fuzz(func(t *testing.T, body string) {
		m, err := Decode(strings.NewReader(body))
		if err != nil {
			return
		}
		if err := m.validate(); err != nil {
			t.Fatalf("accepted an invalid message: %v", err)
		}
		enc, err := m.encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(strings.NewReader(string(enc)))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-decoding %s gave %+v, %v; want %+v", enc, again, err, m)
		}
	})
}
