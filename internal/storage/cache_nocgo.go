//go:build !cgo || race

package storage

// cacheOnGoHeap: without cgo (or in a race build) Pebble's block cache and
// memtables are Go memory, inside runtime/debug.SetMemoryLimit's limit
// (HeapLimit).
const cacheOnGoHeap = true
