package blockkey

// Golden keys of the reference capture's two blocks (block size 4, base
// model), computed once from the documented layout.
const (
	goldenBlock0 Key = 0x1243104afbcd9c1f
	goldenBlock1 Key = 0xc8db9a0ca93b889b
)
