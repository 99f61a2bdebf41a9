package federated

import "context"

// DebugCodes exposes debugCodes to the external tests.
func DebugCodes(ctx context.Context, sn *Snapshot, a int) ([]string, []int64, error) {
	return sn.debugCodes(ctx, a)
}
