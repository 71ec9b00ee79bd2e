package plugin

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

func TestRecoverable(t *testing.T) {
	err := Recoverable(errors.New("engine binary busy"))
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("got %T; want a gRPC status", err)
	}
	if st.Code() != codes.FailedPrecondition {
		t.Errorf("code %v; want FailedPrecondition (Unavailable would read as a dead plugin)", st.Code())
	}
	if st.Message() != "engine binary busy" {
		t.Errorf("message %q", st.Message())
	}
	// Nomad's client unpacks the first detail by its full type name.
	any0 := st.Proto().GetDetails()[0]
	if want := "type.googleapis.com/hashicorp.nomad.plugins.shared.structs.RecoverableError"; any0.GetTypeUrl() != want {
		t.Errorf("detail type %q; want %q", any0.GetTypeUrl(), want)
	}
	var _ *anypb.Any = any0
	if !IsRecoverable(err) {
		t.Error("IsRecoverable = false for a Recoverable error")
	}
	for _, plain := range []error{nil, errors.New("x"), status.Error(codes.Internal, "x")} {
		if IsRecoverable(plain) {
			t.Errorf("IsRecoverable(%v) = true", plain)
		}
	}
}
