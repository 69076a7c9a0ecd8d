// Package geo is MongoDB's geometry over raw BSON, built on Google's S2
// library (github.com/golang/geo), as MongoDB itself is: it parses and
// validates stored geometries (GeoJSON Point, LineString, Polygon with
// holes, MultiPoint, MultiLineString, MultiPolygon, GeometryCollection, and
// legacy coordinate pairs) and query regions ($geometry, $box, $polygon,
// $center, $centerSphere), decides $geoWithin and $geoIntersects, measures
// the distance $near sorts by, and covers geometries and regions with S2
// cells: the keys of a 2dsphere index and the bounds a query scans.
//
// # Invariants
//
//   - Geometry is S2's. Every spherical predicate (containment, crossing,
//     distance, covering) is a call into package s2; this package only
//     composes them. The flat predicates of the legacy shapes ($box,
//     $center, $polygon over x/y) are the plane's elementary tests.
//   - Covering is a superset: every cell of a geometry's covering
//     (Covering) intersects the geometry, and the cells of a region's
//     query bounds (QueryCells) include, as a range or as an ancestor,
//     every cell of every geometry that intersects the region. So an index
//     scan over QueryCells, followed by the exact predicate, returns the
//     collection scan's answer (the planner's differential test checks it).
//   - Parse once, test many: parsed geometries and regions are immutable
//     and safe for concurrent use.
//
// # Deviations from MongoDB
//
// A polygon whose loops S2 rejects is refused, as MongoDB does, but the
// messages name S2-Go's reason, which may word it differently from S2-C++.
// $geoWithin of a line or polygon in a $centerSphere cap tests that every
// vertex lies in the cap. Big polygons (the strictwinding crs) are refused.
// Distances are S2's angles times MongoDB's earth radius (6378.1 km).
package geo
