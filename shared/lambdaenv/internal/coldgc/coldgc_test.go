package coldgc

import "testing"

func TestApplies(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"a Lambda function", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, true},
		{"GOGC set by the operator", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "GOGC": "100"}, false},
		{"GOGC off", map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "GOGC": "off"}, false},
		{"not under Lambda (the CLI, tests)", map[string]string{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := applies(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("applies = %v, want %v", got, tc.want)
			}
		})
	}
}
