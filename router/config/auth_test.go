package config

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestAuthSources(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		hcl     string
		environ []string
		args    []string
		want    Auth
		err     string
	}{
		{name: "default", want: Auth{ReloadInterval: 2 * time.Second}},
		{name: "file", hcl: `api_keys = ["k1", "k2"]
auth {
  keys_file       = "/s/keys.json"
  reload_interval = "5s"
}`, want: Auth{APIKeys: []string{"k1", "k2"}, KeysFile: "/s/keys.json", ReloadInterval: 5 * time.Second}},
		{name: "env over file", hcl: `api_keys = ["k1"]`, environ: []string{"LLMGW_API_KEYS= a , b,,", "LLMGW_KEYS_FILE=/e.json"},
			want: Auth{APIKeys: []string{"a", "b"}, KeysFile: "/e.json", ReloadInterval: 2 * time.Second}},
		{name: "flag over env", environ: []string{"LLMGW_API_KEYS=a"}, args: []string{"-api-keys", "c", "-keys-file", "/f.json"},
			want: Auth{APIKeys: []string{"c"}, KeysFile: "/f.json", ReloadInterval: 2 * time.Second}},
		{name: "bad interval", hcl: "auth {\n reload_interval = \"soon\"\n}", err: "auth reload_interval"},
		{name: "zero interval", hcl: "auth {\n reload_interval = \"0s\"\n}", err: "auth reload_interval 0s: must be positive"},
		{name: "empty key", hcl: `api_keys = ["k", ""]`, err: "api_keys[1] is empty"},
		{name: "unknown", hcl: "auth {\n keys = \"x\"\n}", err: "Unsupported argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			f := BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			c := Default()
			err := c.ParseHCL([]byte(tc.hcl), "t.hcl")
			if err == nil {
				err = c.ApplyEnv(tc.environ)
			}
			if err == nil {
				fs.Visit(func(fl *flag.Flag) {
					for _, s := range settings {
						if s.flag == fl.Name && err == nil {
							err = s.set(&c, *f.values[s.flag])
						}
					}
				})
			}
			if err == nil {
				err = c.Validate()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Auth, tc.want) {
				t.Errorf("Auth = %+v, want %+v", c.Auth, tc.want)
			}
		})
	}
}
