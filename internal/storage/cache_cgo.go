//go:build cgo && !race

package storage

// cacheOnGoHeap says whether Pebble allocates its block cache and
// memtables on the Go heap: with cgo it allocates them with C's malloc
// (outside runtime/debug.SetMemoryLimit's reach), except in race builds,
// where it uses Go memory for some of them (HeapLimit).
const cacheOnGoHeap = false
