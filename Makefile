# Cairn's build targets. `make test` is what CI runs (see .ci/run) and must
# stay under ten minutes on a 2-core machine; long runs have their own targets.

GO      ?= go
PKGS    := ./...
# Packages whose concurrency the race detector must vouch for on every run.
RACE_PKGS := ./internal/storage/... ./internal/engine/... ./internal/catalog/... ./internal/ttl/... ./internal/repl/... ./internal/replset/...

.PHONY: all build test vet fmt-check race invariants unit smoke soak soak-load powercut faults bench bench-profile bench-replset bench-storage bench-ids bench-agg fuzz clean bench-indexes bench-text repl-faults replset-soak soak-preauth conformance txn-anomalies migration-soak migration-phases twophase-soak snapshot-bank bench-migration replset-failover replset-catchup replset-linear replset-powercut

all: build

build:
	$(GO) build $(PKGS)

## test: everything CI checks: vet, gofmt, unit and integration tests, the race detector.
test: vet fmt-check unit race invariants

# -composites=false: bson.D{{"a", 1}} (unkeyed bson.E) is the driver's own
# documented idiom for documents; every other vet check stays on.
vet:
	$(GO) vet -composites=false $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# unit: every package's tests but INVARIANTS_ONLY's, which the invariants
# pass runs whole (see there). The root package's real-process tests take
# about three minutes alone; -timeout 20m keeps a loaded machine (several
# worktrees testing at once) from failing them on go test's 10-minute
# default, as the race target does. -parallel 4: those tests wait on their
# processes (eight of them used 15-17 s of CPU in 33-80 s), and four at a
# time took 0.42-0.67 of the time two did, in three interleaved pairs
# (RELIABILITY.md, session 19); the other parallel tests of this pass are
# the smoke test's clients and repl's two linearizability runs.
unit:
	$(GO) test -count=1 -timeout 20m -parallel 4 -skip '^($(INVARIANTS_ONLY))$$' $(PKGS)

# race: the race detector, with the runtime invariant checks on
# (internal/invariants): a broken invariant panics with its name. Then
# storage and engine again without the tag, because the invariants build
# does not overlap commit groups (storage's "Overlapped sync"), and the
# overlap is where the pipeline and the completer goroutine share state.
# That second pass runs -short: the crash tests there take a quarter of their
# power cuts and the bulk log test a third of its writes (the unit pass and
# the first race pass run them whole). It skips RACE_ONCE: tests with one
# writer or none, whose groups never overlap, so that the second pass would
# repeat the first's races without the checks (the unit pass and the first
# race pass run them).
# TestDocumentCacheModel drives the document cache alone (no store, no
# goroutine); TestGroupRefreshInPlace writes from one goroutine, each write
# waiting for its group.
RACE_ONCE := TestDocumentCacheModel|TestGroupRefreshInPlace
race:
	$(GO) test -count=1 -race -timeout 20m -tags invariants $(RACE_PKGS)
	$(GO) test -count=1 -race -short -timeout 20m -skip '^($(RACE_ONCE))$$' ./internal/storage/... ./internal/engine/...

## invariants: the tests that drive the engine hardest, built with the
## invariants tag: the kill -9 crash test (its child process checks after
## every commit group), the planner's differential test, and the shards'
## cached database versions against a stale router.
# One go test command for the three packages: they build once and run side
# by side (each pattern names tests of one package only; the five
# differential tests of internal/commands run in parallel, each on its own
# engine). INVARIANTS_ONLY run here only: the tag adds checks to the same
# assertions, and none of them overlaps commit groups (one writer each, or
# processes whose untagged build the other real-process tests of the unit
# pass run); the crash test runs in both passes, its recovery checked
# plain (groups overlapped) and with the checks.
INVARIANTS_ONLY := TestShardCachesAndStaleRouters|TestDatabaseVersionCache|TestPlannerMatchesCollectionScan(Collated)?|TestGeoPlannerMatchesCollectionScan|TestGeo2dPlannerMatchesCollectionScan|TestTimeseriesMatchesCollection
invariants:
	$(GO) test -count=1 -tags invariants -run '^(TestCrashKeepsAcknowledgedWrites|$(INVARIANTS_ONLY))$$' . ./internal/shardsvr/ ./internal/commands/

## smoke: only the real-client smoke tests (mongosh and the Node.js driver
## against cairn serve); the first run installs them with npm ci. `make test`
## runs them too, as part of ./... .
smoke:
	$(GO) test -count=1 -v ./test/smoke/

## soak: the kill -9 crash tests, many more rounds than `make test` runs:
## the embedded one (300 per sync mode) and the one through a real `cairn
## serve` and the Go driver (CAIRN_WIRE_CRASH_ROUNDS, default 100 per mode).
CAIRN_WIRE_CRASH_ROUNDS ?= 100
soak:
	CAIRN_CRASH_ROUNDS=300 $(GO) test -count=1 -run TestCrashKeepsAcknowledgedWrites -timeout 60m -v .
	CAIRN_WIRE_CRASH_ROUNDS=$(CAIRN_WIRE_CRASH_ROUNDS) $(GO) test -count=1 -run TestWireCrashKeepsAcknowledgedWrites -timeout 60m -v .

## soak-load: a steady YCSB-style mix (SoakMix: reads, updates,
## read-modify-writes, short scans; no inserts) over a fixed data set of
## SOAK_RECORDS records with SOAK_THREADS connections against a real `cairn
## serve` for SOAK_DURATION (default 1h), printing throughput and the
## server's RSS every sixtieth of it; passes only if the last sixth's
## throughput is within 10% of the first sixth's and RSS stays under
## SOAK_MAXRSS MiB. `make test` runs 30 s of it. Set SOAK_SEED to replay a
## run's operations; every run prints its seed.
SOAK_DURATION ?= 1h
SOAK_RECORDS ?= 20000
SOAK_THREADS ?= 8
SOAK_MAXRSS ?= 512
SOAK_SEED ?= 0
soak-load:
	$(GO) test -count=1 -run '^TestSoakLoad$$' -timeout 0 -v ./internal/bench/ -args -soak.duration $(SOAK_DURATION) -soak.records $(SOAK_RECORDS) -soak.threads $(SOAK_THREADS) -soak.maxchange 0.10 -soak.maxrise 0.10 -soak.maxrss $(SOAK_MAXRSS) -soak.seed $(SOAK_SEED)

## powercut: simulated power cuts (Pebble's crash-cloning in-memory
## filesystem) at random moments of inserts, replaces and deletes with a unique
## and a secondary index, flushes and compactions: POWERCUT_CUTS per sync mode
## (default 5,000, so 10,000 in all); `make test` runs 120 per mode. Set
## POWERCUT_SEED to replay a run; every run prints its seed.
POWERCUT_CUTS ?= 5000
POWERCUT_SEED ?= 0
powercut:
	$(GO) test -count=1 -run '^TestPowerCutsKeepAcknowledgedWrites$$' -timeout 120m -v ./internal/engine/ -args -powercut.cuts $(POWERCUT_CUTS) -powercut.seed $(POWERCUT_SEED)

## faults: I/O errors (EIO, ENOSPC) injected with Pebble's errorfs into random
## writes and syncs of the log, FAULTS_N times (default 5,000; `make test` runs 200).
FAULTS_N ?= 5000
faults:
	$(GO) test -count=1 -run '^TestRandomLogFaultsLoseNothing$$' -v ./internal/storage/ -args -logfaults.n $(FAULTS_N)

## repl-faults: the replication fault tests at length (internal/repl): a
## REPL_STEPS-step fault schedule (drops, delays, duplicates, partitions,
## leader isolation, paused clocks, kills and restarts from the Pebble log;
## `make test` runs 25) and REPL_LINRUNS porcupine-checked key-value
## histories under faults (`make test` runs 2), with the race detector and
## the runtime invariant checks. Set REPL_SEED to replay; every run prints it.
REPL_STEPS ?= 2000
REPL_LINRUNS ?= 200
REPL_SEED ?= 0
repl-faults:
	$(GO) test -count=1 -race -tags invariants -run '^(TestFaultScheduleKeepsAcknowledged|TestLinearizableKV)$$' -timeout 120m -v ./internal/repl/ -args -repl.steps $(REPL_STEPS) -repl.linruns $(REPL_LINRUNS) -repl.seed $(REPL_SEED)

## replset-powercut: power cuts of in-process replica set members
## (internal/replset/rstest, each member's files on a crash-cloning in-memory
## filesystem): PCUT_ROUNDS cuts under writers of the primary, a secondary,
## two members or all three, each keeping a random share of the unsynced
## data, with logs compacted every 30 entries; after each, every write that
## must survive is checked on every member (`make test` runs 3). Race
## detector and invariants on. Set PCUT_SEED to replay; every run prints it.
PCUT_ROUNDS ?= 100
PCUT_SEED ?= 0
replset-powercut:
	$(GO) test -count=1 -race -tags invariants -run '^TestPowerCutSchedule$$' -timeout 120m -v ./internal/replset/rstest/ -args -rstest.pcrounds $(PCUT_ROUNDS) -rstest.pcseed $(PCUT_SEED)

## replset-soak: the three-process replica set test (real `cairn serve
## --replSet` members on loopback, the Go driver with replicaSet=) with
## REPLSET_ROUNDS kill -9s of the primary (`make test` runs 3), each
## printing the time from the kill to the first majority write. Set
## REPLSET_SEED to replay; every run prints its seed.
REPLSET_ROUNDS ?= 20
REPLSET_SEED ?=
replset-soak:
	CAIRN_REPLSET_ROUNDS=$(REPLSET_ROUNDS) CAIRN_REPLSET_SEED=$(REPLSET_SEED) $(GO) test -count=1 -run '^TestReplicaSetSurvivesPrimaryKill$$' -timeout 60m -v .

## soak-preauth: issue 22's bounded soak of the pre-authentication surface:
## PREAUTH_N (default 1,000,000) mutated handshake, SASL and command
## messages on unauthenticated connections of a server with --auth, each
## connection mid-SCRAM (TestPreAuthSoak; `make test` sends 20,000). Set
## PREAUTH_SEED to replay; every run prints its seed.
PREAUTH_N ?= 1000000
PREAUTH_SEED ?= 0
soak-preauth:
	$(GO) test -count=1 -run '^TestPreAuthSoak$$' -timeout 60m -v ./internal/server/ -args -preauth.n $(PREAUTH_N) -preauth.seed $(PREAUTH_SEED)
## conformance: the official Go driver's integration suites (the Go tests
## go.mongodb.org/mongo-driver/v2/internal/integration ships, at go.mod's
## version) against a three-member `cairn cluster up` replica set with
## enableTestCommands, one process per top-level test (test/conformance).
## Writes CONFORMANCE_OUT (one pass/fail/skip line per test and subtest),
## prints per-suite counts, and fails on any difference from
## test/conformance/expected.txt (the known failures, each with its reason).
## CONFORMANCE_RUN limits the top-level tests (a regexp). Takes 20-40 min.
CONFORMANCE_OUT ?= conformance-results.txt
CONFORMANCE_RUN ?=
CONFORMANCE_LOGS ?= conformance-logs
conformance:
	$(GO) run ./test/conformance -expected test/conformance/expected.txt -out $(CONFORMANCE_OUT) -logs $(CONFORMANCE_LOGS) -run '$(CONFORMANCE_RUN)'

## migration-soak: chunk migrations between two `cairn serve --shardsvr`
## shards and a config server, with MIGRATION_ROUNDS kill -9s of the donor,
## the recipient or the config server at a random moment of a migration
## under insert load, the victims in turn (`make test` runs 3: each once). Set MIGRATION_SEED to replay.
MIGRATION_ROUNDS ?= 30
MIGRATION_VICTIMS ?= donor,recipient,config
MIGRATION_SEED ?=
migration-soak:
	CAIRN_MIGRATION_KILL_ROUNDS=$(MIGRATION_ROUNDS) CAIRN_MIGRATION_SEED=$(MIGRATION_SEED) CAIRN_MIGRATION_VICTIMS=$(MIGRATION_VICTIMS) $(GO) test -count=1 -run '^TestShardMigrationKill$$' -timeout 120m -v .

## migration-phases: TestMigrationConfigKillPhases over its whole table —
## a migration held at each of its fail points (moveChunkHangAtStep1…6,
## hangInCommitChunkMigration) while the config server, the donor or the
## recipient is killed -9 and restarted (`make test` runs a seeded 2).
## Set MIGRATION_SEED to replay the order.
migration-phases:
	CAIRN_MIGRATION_PHASES=all CAIRN_MIGRATION_SEED=$(MIGRATION_SEED) $(GO) test -count=1 -run '^TestMigrationConfigKillPhases$$' -timeout 30m -v .

## twophase-soak: cross-shard transactions through a router and two
## `cairn serve --shardsvr` shards with TWOPHASE_ROUNDS kill -9s of the
## coordinator or the other participant at the coordinator's fail points
## (after every participant prepared; after the commit decision), checking
## all-or-nothing and every acknowledged commit (`make test` runs 2). Set
## TWOPHASE_SEED to replay.
TWOPHASE_ROUNDS ?= 40
TWOPHASE_SEED ?=
twophase-soak:
	CAIRN_2PC_ROUNDS=$(TWOPHASE_ROUNDS) CAIRN_2PC_SEED=$(TWOPHASE_SEED) $(GO) test -count=1 -run '^TestTwoPhaseCommit$$' -timeout 120m -v .

## snapshot-bank: cross-shard transfers (two-phase commits through a
## router) while snapshot transactions and snapshot finds sum every
## account, for SNAPSHOT_BANK_SECONDS (`make test` runs 2); every sum must
## be the total. CAIRN_SEED replays a run.
SNAPSHOT_BANK_SECONDS ?= 60
snapshot-bank:
	CAIRN_SNAPSHOT_BANK_SECONDS=$(SNAPSHOT_BANK_SECONDS) $(GO) test -count=1 -run '^TestRouterSnapshotBank$$' -timeout 60m -v .

## bench-migration: a migration's throughput (MB/s) with and without
## writers, MIGRATION_MB megabytes in one chunk and MIGRATION_OTHER_MB in
## another chunk of the donor (BENCHMARKS.md).
MIGRATION_MB ?= 64
MIGRATION_OTHER_MB ?= 0
bench-migration:
	CAIRN_MIGRATION_BENCH_MB=$(MIGRATION_MB) CAIRN_MIGRATION_BENCH_OTHER_MB=$(MIGRATION_OTHER_MB) $(GO) test -count=1 -run '^TestMigrationThroughput$$' -timeout 60m -v .

## replset-failover: issue 18's failover measurement, 50 kill -9s of the
## primary (the soak above with REPLSET_ROUNDS=50); the last lines print the
## distribution of kill → first majority write (min, median, p90, p99, max).
replset-failover:
	$(MAKE) replset-soak REPLSET_ROUNDS=50

## replset-catchup: a member added to a set holding CATCHUP_MB (default
## 1024) of documents catches up by snapshot and log; prints the time.
CATCHUP_MB ?= 1024
replset-catchup:
	CAIRN_CATCHUP_MB=$(CATCHUP_MB) $(GO) test -count=1 -run '^TestReplicaSetCatchUpLarge$$' -timeout 90m -v .

## replset-linear: porcupine-checked register histories (read, write, CAS
## through the Go driver) against three real members under kill -9 and
## SIGSTOP (`make test` runs one 6 s run); LINEAR_RUNS runs of
## LINEAR_SECONDS each. Set LINEAR_SEED to replay; every run prints it.
LINEAR_RUNS ?= 20
LINEAR_SECONDS ?= 20
LINEAR_SEED ?=
replset-linear:
	CAIRN_LINEAR_RUNS=$(LINEAR_RUNS) CAIRN_LINEAR_SECONDS=$(LINEAR_SECONDS) CAIRN_LINEAR_SEED=$(LINEAR_SEED) $(GO) test -count=1 -run '^TestReplicaSetLinearizableRegister$$' -timeout 120m -v .

## bench-replset: issue 18's measurement: YCSB A (majority writes) and C
## (reads from the primary) against a three-member set of real `cairn serve`
## processes on loopback (`cairn cluster up`), alternated run by run with a
## standalone durable node (`--compare`) in the same bench, with the bench's
## defaults (RS_BENCH_RECORDS records, 16 threads) and three runs each; the
## last lines print "cairn vs compare: throughput N%" (the set ÷ the
## standalone). Members on RS_BENCH_PORT and the next two, the standalone
## on RS_BENCH_PORT+10; data under RS_BENCH_DIR, removed first. The set's
## URI has retryWrites=false because drivers send no transaction numbers to
## a standalone: both sides then do the same writes.
## RS_BENCH_PIN=1 gives the set the CPU a deployment would (Linux, taskset,
## two or more cores): the primary, the standalone and the bench client share
## core 0 and the two secondaries core 1, so the primary has what the
## standalone has and the secondaries do not take it, as on their own
## machines. Unpinned on a 2-core host, the three members and the client share
## both cores and the ratio measures the set's total CPU per operation.
RS_BENCH_PORT ?= 27300
RS_BENCH_DIR ?= /tmp/cairn-bench-replset
RS_BENCH_RECORDS ?= 100000
RS_BENCH_THREADS ?= 16
bench-replset:
	rm -rf $(RS_BENCH_DIR) && mkdir -p $(RS_BENCH_DIR) && $(GO) build -o $(RS_BENCH_DIR)/cairn ./cmd/cairn
	cd $(RS_BENCH_DIR) && p=$(RS_BENCH_PORT); sa=$$((p + 10)); \
	./cairn cluster up --replicas 3 --port $$p --dbpath set > cluster.log 2>&1 & cl=$$!; \
	./cairn serve --port $$sa --dbpath standalone > standalone.log 2>&1 & st=$$!; \
	trap 'kill -INT $$cl; kill $$st; wait' EXIT; \
	pin=; if [ -n "$(RS_BENCH_PIN)" ]; then \
	  until grep -q "^rs0's primary: " cluster.log; do kill -0 $$cl || exit 1; sleep 1; done; \
	  pri=$$(sed -n "s/^rs0's primary: //p" cluster.log); \
	  sed -n 's/^rs0 member [0-9]*: \([^,]*\), pid \([0-9]*\),.*/\1 \2/p' cluster.log | while read h pid; do \
	    core=1; [ "$$h" = "$$pri" ] && core=0; taskset -a -c -p $$core $$pid > /dev/null && echo "pinned $$h (pid $$pid) to core $$core"; \
	  done; \
	  taskset -a -c -p 0 $$st > /dev/null && echo "pinned the standalone (pid $$st) and the bench to core 0"; pin="taskset -c 0"; \
	fi; \
	$$pin ./cairn bench --workload a,c --records $(RS_BENCH_RECORDS) --ops $(RS_BENCH_RECORDS) --threads $(RS_BENCH_THREADS) --runs 3 --max-time 60s \
	  --uri "mongodb://127.0.0.1:$$p,127.0.0.1:$$((p + 1)),127.0.0.1:$$((p + 2))/?replicaSet=rs0&retryWrites=false" \
	  --compare "mongodb://127.0.0.1:$$sa"

## bench: a quick YCSB run of every workload over the wire, next to the
## protocol, durable, Pebble and Pebble-with-oplog floors (about a minute). The full measurement in
## BENCHMARKS.md uses --records 100000 --threads 16 --runs 3.
bench:
	$(GO) run ./cmd/cairn bench --workload all --records 2000 --ops 4000 --threads 4 --floor protocol --floor durable --floor pebble --floor pebble-oplog

## bench-profile: issue 16's profiles: every workload (100,000 records, 16 threads, 30 s runs)
## against a cairn built with -tags cairnpprof, the server's CPU and allocation profiles of each
## phase written to PROFILE_DIR, and the top 15 functions of each printed (and kept in top15.txt).
PROFILE_DIR ?= /tmp/cairn-profiles
PROFILE_ARGS ?= --workload all --records 100000 --ops 100000 --threads 16 --max-time 30s
bench-profile:
	rm -rf $(PROFILE_DIR) && mkdir -p $(PROFILE_DIR)
	$(GO) build -tags cairnpprof -o $(PROFILE_DIR)/cairn ./cmd/cairn
	$(PROFILE_DIR)/cairn bench $(PROFILE_ARGS) --profile-dir $(PROFILE_DIR) | tee $(PROFILE_DIR)/report.txt
	cd $(PROFILE_DIR) && for f in cpu-*.pprof; do \
	  stem=$${f#cpu-}; stem=$${stem%.pprof}; \
	  echo "== $$stem: server CPU, top 15 (flat)"; $(GO) tool pprof -top -nodecount=15 cairn $$f 2>/dev/null | tail -n +5; \
	  echo "== $$stem: server allocations, top 15 (bytes)"; \
	  $(GO) tool pprof -top -nodecount=15 -sample_index=alloc_space -base allocs-$$stem-start.pprof cairn allocs-$$stem-end.pprof 2>/dev/null | tail -n +5; \
	done | tee top15.txt

## bench-storage: storage-layer benchmarks against raw Pebble.
bench-storage:
	$(GO) test -run XXX -bench . -benchtime 3s -count 3 ./internal/storage/

## bench-ids: the sequential-id load benchmark (5 M 1 KiB documents per id kind; ~15 GB written, many minutes).
bench-ids:
	$(GO) test -run XXX -bench IDLoad -benchtime 1x -timeout 90m ./internal/engine/ -args -idload.docs 5000000

## bench-agg: the aggregation benchmarks of BENCHMARKS.md through the embedded
## API: $group over 1 M documents, $lookup of 10 k documents with and without
## a foreign index, the latest-version pipeline over 1 M versions (many minutes).
bench-agg:
	$(GO) test -run XXX -bench 'AggGroup|AggLookup|AggLatestVersion' -benchtime 1x -timeout 90m .

## bench-indexes: issue 6's index measurements over the wire on 1 M documents (point and range
## queries against collection scans, index build time, inserts with 0/1/3/5 indexes; a few minutes).
bench-indexes:
	$(GO) test -run XXX -bench BenchmarkIndexes -benchtime 1x -timeout 60m ./internal/server/ -args -ixbench.docs 1000000 -ixbench.inserts 200000

## bench-text: issue 24's $text measurement over the wire on 1 M short documents (a rare word
## found by $text against a case-insensitive whole-word $regex collection scan; a few minutes).
bench-text:
	$(GO) test -run XXX -bench BenchmarkText -benchtime 1x -timeout 60m ./internal/server/ -args -textbench.docs 1000000

## fuzz: every Go fuzz target in the repository for FUZZTIME each (default
## 60s; each starts from its committed corpus in testdata/fuzz), then the
## live-server mutation run: LIVEFUZZ_N mutants of real driver traffic sent
## to a server over TCP (default 200,000; `make test` sends 2,000).
FUZZTIME ?= 60s
LIVEFUZZ_N ?= 200000
fuzz:
	@failed=""; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		dir=./$$(dirname $${f#./}); \
		for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | cut -d' ' -f2); do \
			echo "== $$dir $$t ($(FUZZTIME))"; \
			$(GO) test -run XXX -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$dir || failed="$$failed $$dir:$$t"; \
		done; \
	done; \
	$(GO) test -count=1 -run '^TestLiveServerMutations$$' -v ./internal/server/ -args -livefuzz.n $(LIVEFUZZ_N) || failed="$$failed live-server"; \
	if [ -n "$$failed" ]; then echo "fuzz targets that failed (inputs in their testdata/fuzz):$$failed"; exit 1; fi

clean:
	rm -rf cairn-data

## txn-anomalies: the list-append and bank transaction workloads through
## the Go driver on a three-member replica set with, in turn, a primary
## kill, a network partition of the primary from the other members for
## 2.5-4 s (a TCP proxy per member; clients still reach it), or the primary
## paused by SIGSTOP for 1.5-3 s, checked for G0, G1a/b/c, G-single, lost
## updates and the bank total (package txncheck): 100 runs (`make test`
## runs 5). CAIRN_TXN_SEED replays.
CAIRN_TXN_RUNS ?= 100
txn-anomalies:
	CAIRN_TXN_RUNS=$(CAIRN_TXN_RUNS) $(GO) test -count=1 -run '^TestTransactionAnomalies$$' -timeout 60m -v .
