package plugin

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmgw/llmgw/plugin/proto/structs"
)

// Recoverable wraps err as a gRPC status whose first detail is Nomad's
// RecoverableError marker, so the client applies the task's restart policy
// instead of failing the task for good. A plain error is unrecoverable.
func Recoverable(err error) error {
	st := status.New(codes.FailedPrecondition, err.Error())
	withDetail, derr := st.WithDetails(&structs.RecoverableError{Recoverable: true})
	if derr != nil {
		// Only a nil or unmarshalable detail fails; ours is neither, but a
		// plain status still reports the error rather than losing it.
		return st.Err()
	}
	return withDetail.Err()
}

// IsRecoverable reports whether err is a status carrying the
// RecoverableError marker as its first detail, as Nomad's client checks.
func IsRecoverable(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	d := st.Details()
	if len(d) == 0 {
		return false
	}
	re, ok := d[0].(*structs.RecoverableError)
	return ok && re.GetRecoverable()
}
