package upstream

import (
	"encoding/json"
	"slices"
	"testing"

	"golang.org/x/oauth2"
)

func TestDecodeClaims(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    claims
		wantErr bool
	}{
		{name: "bool true", in: `{"sub":"s","email":"a@b.c","email_verified":true,"name":"A"}`, want: claims{Subject: "s", Email: "a@b.c", Name: "A", EmailVerified: true}},
		{name: "bool false", in: `{"sub":"s","email":"a@b.c","email_verified":false}`, want: claims{Subject: "s", Email: "a@b.c"}},
		{name: "string true (Cognito)", in: `{"sub":"s","email_verified":"true"}`, want: claims{Subject: "s", EmailVerified: true}},
		{name: "escaped string true", in: `{"sub":"s","email_verified":"\u0074rue"}`, want: claims{Subject: "s", EmailVerified: true}},
		{name: "string false", in: `{"sub":"s","email_verified":"false"}`, want: claims{Subject: "s"}},
		{name: "absent", in: `{"sub":"s","email":"a@b.c"}`, want: claims{Subject: "s", Email: "a@b.c"}},
		{name: "null", in: `{"sub":"s","email_verified":null}`, want: claims{Subject: "s"}},
		{name: "azp", in: `{"sub":"s","azp":"c"}`, want: claims{Subject: "s", AuthorizedParty: "c"}},
		{name: "capitalised string", in: `{"email_verified":"TRUE"}`, wantErr: true},
		{name: "padded string", in: `{"email_verified":" true"}`, wantErr: true},
		{name: "yes", in: `{"email_verified":"yes"}`, wantErr: true},
		{name: "number", in: `{"email_verified":1}`, wantErr: true},
		{name: "array", in: `{"email_verified":[true]}`, wantErr: true},
		{name: "object", in: `{"email_verified":{"value":true}}`, wantErr: true},
		{name: "email not a string", in: `{"email":["a@b.c"]}`, wantErr: true},
		{name: "not an object", in: `"x"`, wantErr: true},
		{name: "not JSON", in: `{`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeClaims([]byte(tt.in))
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("decodeClaims(%s) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// FuzzDecodeClaims: claims from the provider either decode, with email_verified true
// only for a JSON true or the string "true", or fail; never a panic.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range []string{
		`{"sub":"s","email":"a@b.c","email_verified":true,"name":"A","azp":"c"}`,
		`{"email_verified":"true"}`, `{"email_verified":"false"}`, `{"email_verified":null}`,
		`{"email_verified":1}`, `{}`, `[]`, `{"email_verified":"\u0074rue"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeClaims(data)
		if err != nil {
			return
		}
		var w struct {
			Sub           string `json:"sub"`
			Email         string `json:"email"`
			EmailVerified any    `json:"email_verified"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			t.Fatalf("decodeClaims accepted %q, which encoding/json refuses: %v", data, err)
		}
		if got.Subject != w.Sub || got.Email != w.Email {
			t.Fatalf("decodeClaims(%q) = %+v, want sub %q email %q", data, got, w.Sub, w.Email)
		}
		verified := w.EmailVerified == true || w.EmailVerified == "true"
		if got.EmailVerified != verified {
			t.Fatalf("decodeClaims(%q).EmailVerified = %v for email_verified %#v", data, got.EmailVerified, w.EmailVerified)
		}
	})
}

func TestCheckAuthorizedParty(t *testing.T) {
	tests := []struct {
		name    string
		aud     []string
		azp     string
		wantErr bool
	}{
		{name: "one audience, no azp", aud: []string{"me"}},
		{name: "one audience, azp us", aud: []string{"me"}, azp: "me"},
		{name: "several audiences, azp us", aud: []string{"me", "api"}, azp: "me"},
		{name: "azp another client", aud: []string{"me"}, azp: "other", wantErr: true},
		{name: "several audiences, no azp", aud: []string{"me", "api"}, wantErr: true},
		{name: "several audiences, azp another", aud: []string{"me", "other"}, azp: "other", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkAuthorizedParty(tt.aud, tt.azp, "me"); (err != nil) != tt.wantErr {
				t.Fatalf("checkAuthorizedParty(%q, %q) = %v, want error %v", tt.aud, tt.azp, err, tt.wantErr)
			}
		})
	}
}

func TestAuthStyle(t *testing.T) {
	tests := []struct {
		methods []string
		want    oauth2.AuthStyle
		wantErr bool
	}{
		{methods: nil, want: oauth2.AuthStyleInHeader},
		{methods: []string{"client_secret_post", "client_secret_basic"}, want: oauth2.AuthStyleInHeader},
		{methods: []string{"client_secret_post"}, want: oauth2.AuthStyleInParams},
		{methods: []string{"private_key_jwt"}, wantErr: true},
		{methods: []string{}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := authStyle(tt.methods)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("authStyle(%q) = %v, %v; want %v, error %v", tt.methods, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestScopes(t *testing.T) {
	tests := []struct{ in, want []string }{
		{in: nil, want: []string{"openid", "email", "profile"}},
		{in: []string{"email", "openid"}, want: []string{"email", "openid"}},
		{in: []string{"email"}, want: []string{"openid", "email"}},
	}
	for _, tt := range tests {
		if got := scopes(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("scopes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
