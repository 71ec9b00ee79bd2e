package kvxfer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const pull = `"do_remote_prefill":true,"remote_engine_id":"p0","remote_request_id":"r1","remote_host":"10.0.0.1","remote_port":5600`

func TestParseParams(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Params
		err      string
	}{
		{name: "absent", in: ``},
		{name: "null", in: `null`},
		{name: "prefill step as the proxy sends it", in: `{"do_remote_decode":true,"do_remote_prefill":false,"remote_engine_id":null,"remote_block_ids":null,"remote_host":null,"remote_port":null}`,
			want: Params{DoRemoteDecode: true}},
		{name: "decode step", in: `{` + pull + `,"do_remote_decode":false,"remote_block_ids":[[3,4,5]],"tp_size":2}`,
			want: Params{DoRemotePrefill: true, RemoteEngineID: "p0", RemoteRequestID: "r1", RemoteHost: "10.0.0.1", RemotePort: 5600, RemoteBlockIDs: [][]int{{3, 4, 5}}, TPSize: 2}},
		{name: "flat block ids read as one group", in: `{` + pull + `,"remote_block_ids":[7,8]}`,
			want: Params{DoRemotePrefill: true, RemoteEngineID: "p0", RemoteRequestID: "r1", RemoteHost: "10.0.0.1", RemotePort: 5600, RemoteBlockIDs: [][]int{{7, 8}}}},
		{name: "unknown keys ignored", in: `{"do_remote_decode":true,"x":{"y":1}}`, want: Params{DoRemoteDecode: true}},
		{name: "not an object", in: `[1]`, err: "must be a JSON object"},
		{name: "string flag", in: `{"do_remote_decode":"yes"}`, err: "kv_transfer_params"},
		{name: "both directions", in: `{"do_remote_decode":true,` + pull + `,"remote_block_ids":[[1]]}`, err: "both true"},
		{name: "no engine id", in: `{"do_remote_prefill":true,"remote_request_id":"r","remote_host":"h","remote_port":1,"remote_block_ids":[[1]]}`, err: "needs remote_engine_id"},
		{name: "no request id", in: `{"do_remote_prefill":true,"remote_engine_id":"p","remote_host":"h","remote_port":1,"remote_block_ids":[[1]]}`, err: "needs remote_request_id"},
		{name: "no host", in: `{"do_remote_prefill":true,"remote_engine_id":"p","remote_request_id":"r","remote_port":1,"remote_block_ids":[[1]]}`, err: "needs remote_host"},
		{name: "port out of range", in: `{"do_remote_prefill":true,"remote_engine_id":"p","remote_request_id":"r","remote_host":"h","remote_port":70000,"remote_block_ids":[[1]]}`, err: "remote_port 70000"},
		{name: "no blocks", in: `{` + pull + `}`, err: "needs remote_block_ids"},
		{name: "blocks not a list", in: `{` + pull + `,"remote_block_ids":"1,2"}`, err: "remote_block_ids must be"},
		{name: "negative block id", in: `{` + pull + `,"remote_block_ids":[[1,-2]]}`, err: "negative block id -2"},
		{name: "tp_size zero", in: `{"tp_size":0}`, err: "tp_size must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseParams(json.RawMessage(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The answer a prefill step writes reads back as the decode step's input.
func TestParamsRoundTrip(t *testing.T) {
	p := Params{DoRemotePrefill: true, RemoteEngineID: "p0", RemoteRequestID: "req-1", RemoteHost: "h", RemotePort: 5601, RemoteBlockIDs: [][]int{{1, 2}, {}}, TPSize: 1}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"remote_block_ids":[[1,2],[]]`) || !strings.Contains(string(b), `"do_remote_decode":false`) {
		t.Errorf("marshalled %s", b)
	}
	back, err := ParseParams(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func FuzzParseParams(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"do_remote_decode":true}`, `{` + pull + `,"remote_block_ids":[[1,2]]}`,
		`{` + pull + `,"remote_block_ids":[3]}`, `{"remote_block_ids":[[-1]]}`, `{"tp_size":-3}`, `[[]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ParseParams(in)
		if err != nil {
			if p.DoRemotePrefill || p.DoRemoteDecode || p.RemoteBlockIDs != nil {
				t.Fatalf("error %v with a non-zero result %+v", err, p)
			}
			return
		}
		if p.DoRemoteDecode && p.DoRemotePrefill {
			t.Fatalf("both directions accepted: %s", in)
		}
		n := 0
		for _, g := range p.RemoteBlockIDs {
			for _, id := range g {
				if id < 0 {
					t.Fatalf("negative id accepted: %s", in)
				}
			}
			n += len(g)
		}
		if n > MaxBlockIDs {
			t.Fatalf("%d ids accepted", n)
		}
		if p.DoRemotePrefill && (p.RemoteEngineID == "" || p.RemoteRequestID == "" || p.RemoteHost == "" || p.RemotePort < 1 || p.RemotePort > 65535 || len(p.RemoteBlockIDs) == 0) {
			t.Fatalf("incomplete pull accepted: %+v", p)
		}
		// What parses marshals and parses back to the same params.
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseParams(b)
		if err != nil && (p.DoRemotePrefill || p.DoRemoteDecode) {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		if err == nil && (back.DoRemotePrefill != p.DoRemotePrefill || back.RemotePort != p.RemotePort || back.RemoteEngineID != p.RemoteEngineID) {
			t.Fatalf("round trip changed %+v to %+v", p, back)
		}
	})
}
