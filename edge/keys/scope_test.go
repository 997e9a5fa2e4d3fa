package keys_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/partner-edge/partner-edge/edge/keys"
)

// docs/contract.md section 26: `edge keys add --scope webhooks:manage`
// grants the webhook routes' scope beside properties:read; --scopes still
// names the whole list.
func TestAddScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{keys.ScopePropertiesRead}},
		{[]string{"--scope", keys.ScopeWebhooksManage}, []string{keys.ScopePropertiesRead, keys.ScopeWebhooksManage}},
		{[]string{"--scopes", keys.ScopeWebhooksManage}, []string{keys.ScopeWebhooksManage}},
		{[]string{"--scopes", "", "--scope", keys.ScopeWebhooksManage}, []string{keys.ScopeWebhooksManage}},
		{[]string{"--scope", keys.ScopePropertiesRead}, []string{keys.ScopePropertiesRead}},
	} {
		file := filepath.Join(t.TempDir(), "keys.json")
		args := append([]string{"add", "--file", file, "--brand", "aurora", "--mode", "live", "--json"}, tc.args...)
		var out, errOut bytes.Buffer
		if err := keys.Command(args, func(string) (string, bool) { return "", false }, &out, &errOut); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, errOut.String())
		}
		var m struct{ Key string }
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		st, err := keys.Open(file, keys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k, ok := st.Lookup(m.Key)
		if !ok {
			t.Fatalf("%v: the minted key is not in the file", tc.args)
		}
		for _, sc := range []string{keys.ScopePropertiesRead, keys.ScopeWebhooksManage} {
			if got, want := k.HasScope(sc), slices.Contains(tc.want, sc); got != want {
				t.Errorf("%v: HasScope(%s) = %v, want %v", tc.args, sc, got, want)
			}
		}
	}
	var errOut bytes.Buffer
	err := keys.Command([]string{"add", "--file", filepath.Join(t.TempDir(), "k.json"), "--brand", "a", "--mode", "live", "--scope", "a,b"},
		func(string) (string, bool) { return "", false }, &bytes.Buffer{}, &errOut)
	if err == nil {
		t.Error("--scope a,b was taken")
	}
}
