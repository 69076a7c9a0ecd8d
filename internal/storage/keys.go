package storage

import "encoding/binary"

// Keyspace prefixes (see the package comment).
const (
	SpaceDocument byte = 'd'
	SpaceIndex    byte = 'i'
	SpaceMeta     byte = 'm'
	SpaceSystem   byte = 's'
	// SpaceNatural holds a capped collection's insertion order (package
	// engine, capped.go): n <collID> then a record kind and its key.
	SpaceNatural byte = 'n'
	// SpaceRetry holds retryable writes' records of executed statements
	// (package session): r <session key> <txnNumber> <stmtId> → result.
	SpaceRetry byte = 'r'
	// SpaceOplog holds the change log (package engine, oplog.go):
	// o <ts, 8 bytes big-endian> → the entry's BSON.
	SpaceOplog byte = 'o'
	// SpaceHistory holds a versioned collection's document versions
	// (package engine, history.go): h <collID> <keystring(_id)>
	// <^validFrom> <^version> → the version's record.
	SpaceHistory byte = 'h'
	// SpaceHistoryVersion finds the same versions by number:
	// v <collID> <keystring(_id)> <^version> → validFrom.
	SpaceHistoryVersion byte = 'v'
)

// Prefix returns the key prefix of object id in keyspace space, appended to dst.
func Prefix(dst []byte, space byte, id uint64) []byte {
	dst = append(dst, space)
	return binary.AppendUvarint(dst, id)
}

// DocKey appends the key of a document of collection collID whose encoded
// _id is idKey.
func DocKey(dst []byte, collID uint64, idKey []byte) []byte {
	return append(Prefix(dst, SpaceDocument, collID), idKey...)
}

// HistoryKey appends the key of version v of the document of collection
// collID whose encoded _id is idKey, which became valid at cluster time ts.
// Time and version are stored complemented, big-endian, so a document's
// versions sort newest first (a document's versions rise with their
// times) and "the version valid at T" is one seek to HistoryKey(…, T, ^0):
// it lands on the newest version that began at or before T.
func HistoryKey(dst []byte, collID uint64, idKey []byte, ts, v uint64) []byte {
	dst = append(Prefix(dst, SpaceHistory, collID), idKey...)
	dst = binary.BigEndian.AppendUint64(dst, ^ts)
	return binary.BigEndian.AppendUint64(dst, ^v)
}

// HistorySuffix is the length of what a history key adds to its
// document's prefix (time and version).
const HistorySuffix = 16

// HistoryKeyTime returns the time a history key ends with.
func HistoryKeyTime(key []byte) uint64 {
	if len(key) < HistorySuffix {
		return 0
	}
	return ^binary.BigEndian.Uint64(key[len(key)-16:])
}

// HistoryKeyVersion returns the version a history key or a version key
// (HistoryVersionKey) ends with.
func HistoryKeyVersion(key []byte) uint64 {
	if len(key) < 8 {
		return 0
	}
	return ^binary.BigEndian.Uint64(key[len(key)-8:])
}

// HistoryVersionKey appends the key that finds version v of the document
// idKey of collID by its number (its value is the version's validFrom, the
// rest of its HistoryKey).
func HistoryVersionKey(dst []byte, collID uint64, idKey []byte, v uint64) []byte {
	dst = append(Prefix(dst, SpaceHistoryVersion, collID), idKey...)
	return binary.BigEndian.AppendUint64(dst, ^v)
}

// PrefixEnd returns the smallest key greater than every key that starts with
// prefix, or nil if there is none (prefix is all 0xff).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// SplitKey splits a document or index key into its keyspace, the
// collection or index id and the rest of the key; ok is false for keys of
// other keyspaces.
func SplitKey(key []byte) (space byte, id uint64, rest []byte, ok bool) {
	if len(key) == 0 || key[0] != SpaceDocument && key[0] != SpaceIndex {
		return 0, 0, nil, false
	}
	id, n := binary.Uvarint(key[1:])
	if n <= 0 {
		return 0, 0, nil, false
	}
	return key[0], id, key[1+n:], true
}

// SystemKey returns the key of a named system record (a sequence, a server
// parameter, the format marker).
func SystemKey(name string) []byte {
	return append([]byte{SpaceSystem, '/'}, name...)
}

// keyspaceEnd returns the end of the keyspace object that key belongs to: one
// collection's documents, one index's entries, or the whole of a keyspace
// without ids (catalog, system). Nil means the end of all keys.
func keyspaceEnd(key []byte) []byte {
	if len(key) == 0 {
		return nil
	}
	switch key[0] {
	case SpaceDocument, SpaceIndex, SpaceNatural, SpaceHistory, SpaceHistoryVersion:
		if _, n := binary.Uvarint(key[1:]); n > 0 {
			return PrefixEnd(key[:1+n])
		}
	}
	return PrefixEnd(key[:1])
}

// CollectionOfKey returns the collection or index id a key of an id-keyed
// keyspace (d, i, n, h, v) starts with; 0 for any other key.
func CollectionOfKey(key []byte) uint64 {
	if len(key) < 2 {
		return 0
	}
	id, n := binary.Uvarint(key[1:])
	if n <= 0 {
		return 0
	}
	return id
}
