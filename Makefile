# hallpass — build, run, test.
#   make          install what is missing, build the launcher, hallpass-request and ./hallpass
#   make run      ... and start a sandboxed shell in the current directory
#   make test     every test (unit, kernel, end-to-end as an unprivileged user)
#   make check    deno fmt --check, deno lint, a type-check of every module (lockfiles frozen)
#   make bench    the performance table: bench/run.sh, start-up and agent rows included (bench/results/latest.md)
#   make install  hallpass and hallpass-request to $(PREFIX)/bin (default ~/.local)

DENO_VERSION := 2.9.6
TOOLS        := $(CURDIR)/.tools
DENO         := $(TOOLS)/node_modules/deno/deno
PREFIX       ?= $(HOME)/.local
MUSL_CC      ?= musl-gcc
# A small young generation: the supervisor allocates little per notification, and peak RSS stays lower.
V8_FLAGS     := --max-semi-space-size=1
CFLAGS_STATIC := -static -Os -Wall -Wextra -Werror -D_GNU_SOURCE -fno-strict-aliasing
# What the build and the tests use (the tests run real programs: shells, compilers, editors, network tools).
APT_PKGS     := musl-tools libseccomp2 tmux gcc make python3 git strace less vim curl netcat-openbsd \
                bsdutils util-linux tar procps
# What only the tests need: container runtimes and busybox for hallpass agent, a browser for its web page,
# a D-Bus session bus for the local IPC test.
TEST_PKGS    := runc crun busybox-static chromium containerd dbus-daemon dbus-bin
BENCH_PKGS   := time bubblewrap
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# TLS through the system's CA store: a machine behind a TLS-inspecting proxy has that CA there, not in Deno's
# or Node's own list (deno: "invalid peer certificate: UnknownIssuer").
export DENO_TLS_CA_STORE := system
CA_FILE      := $(firstword $(wildcard /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt))
ifneq ($(CA_FILE),)
export NODE_EXTRA_CA_CERTS ?= $(CA_FILE)
endif
# What hallpass itself needs, pinned in runtime.lock (deno.lock also holds the test-only packages).
RUNTIME_LOCK := --lock=$(CURDIR)/runtime.lock --frozen

.PHONY: all deps apt deno run test test-deps bench install clean check fmt hallpass-request verify
all: deps build/hallpass-launcher build/libhallpass-fastpath.so build/libhallpass-relay.so build/libhallpass-start.so build/filter.bpf hallpass-request hallpass verify

# Debian/Ubuntu packages the build and the tests use, installed only when missing; then the pinned Deno.
deps: apt
	@$(MAKE) --no-print-directory deno
apt:
	@missing=""; for p in $(APT_PKGS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then \
	    echo "make: missing packages:$$missing; as root: apt-get install$$missing (then make again)" >&2; exit 1; fi; \
	  echo "make: installing$$missing"; \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; } \
	    >build-apt.log 2>&1 || { cat build-apt.log; echo "make: apt-get install$$missing failed (above)" >&2; exit 1; }; \
	  rm -f build-apt.log; \
	fi

# A pinned Deno from the npm registry (JSR and Deno's download server are not needed).
deno: $(DENO)
$(DENO):
	@command -v npm >/dev/null || $(MAKE) --no-print-directory apt APT_PKGS=npm
	@mkdir -p $(TOOLS)
	@echo "make: installing deno $(DENO_VERSION) from the npm registry into .tools/"
	@cd $(TOOLS) && npm install --no-audit --no-fund deno@$(DENO_VERSION) >npm-install.log 2>&1 \
	  || { cat npm-install.log; echo "make: npm install deno@$(DENO_VERSION) failed (above)" >&2; exit 1; }
	@$(DENO) --version | head -1

build/hallpass-launcher: helper/launcher/launcher.c
	@mkdir -p build
	$(MUSL_CC) $(CFLAGS_STATIC) -o $@ $<
	@strip $@ 2>/dev/null || true

# hallpass's npm packages in Deno's cache (runtime.lock: the test-only ones are not fetched). Output on failure.
build/deps.stamp: runtime.lock deno.json | deno
	@mkdir -p build
	@$(DENO) cache $(RUNTIME_LOCK) main.ts lib/supervisor/worker.ts $(LAZY_MODULES) helper/bpf/prebuild.ts >build/cache.log 2>&1 \
	  || { cat build/cache.log; echo "make: deno could not fetch hallpass's packages (above)" >&2; exit 1; }
	@touch $@

# The seccomp filter, compiled once here (lib/filter/filter_build.ts): hallpass reads it instead of compiling at start-up.
build/filter.bpf: lib/filter/filter_plan.ts lib/filter/filter_sys.ts lib/filter/syscall_table.ts lib/filter/filter_build.ts lib/filter/filter_files.ts ffi/seccomp.ts ffi/errors.ts helper/bpf/prebuild.ts build/deps.stamp
	@mkdir -p build
	$(DENO) run --quiet --allow-all --no-prompt --cached-only $(RUNTIME_LOCK) helper/bpf/prebuild.ts build >/dev/null

# The supervisor's fast path (bench/README.md): loaded by the Deno process, so built against its libc.
build/libhallpass-fastpath.so: helper/fastpath/fastpath.c
	@mkdir -p build
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o $@ $<
	@strip $@ 2>/dev/null || true

# The pty relay (lib/ui/pty_session.ts): loaded by the Deno process like the fast path.
build/libhallpass-relay.so: helper/relay/relay.c
	@mkdir -p build
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o $@ $<
	@strip $@ 2>/dev/null || true

# The start-up's batch calls over many paths (helper/start/start.c, ffi/start.ts): loaded like the fast path.
build/libhallpass-start.so: helper/start/start.c
	@mkdir -p build
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o $@ $<
	@strip $@ 2>/dev/null || true

# hallpass-request: musl-gcc when present, else Docker.
hallpass-request: helper/hallpass-request/hallpass-request.c
	@if command -v $(MUSL_CC) >/dev/null 2>&1; then \
	  echo "$(MUSL_CC) $(CFLAGS_STATIC) -o hallpass-request $<"; \
	  $(MUSL_CC) $(CFLAGS_STATIC) -o hallpass-request $< && strip hallpass-request; \
	elif command -v docker >/dev/null 2>&1; then \
	  echo "make: musl-gcc missing, building hallpass-request in Docker"; \
	  docker build -q -f helper/hallpass-request/Dockerfile --target build -t hallpass-request-build helper/hallpass-request && \
	  id=$$(docker create hallpass-request-build) && docker cp $$id:/hallpass-request ./hallpass-request && docker rm $$id >/dev/null; \
	else echo "make: need musl-gcc (apt-get install musl-tools) or docker" >&2; exit 1; fi

# Modules loaded through lib/util/lazy_import.ts (out of Deno's start-up walk): a compiled binary embeds only what
# it is told to.
LAZY_MODULES := lib/policy/agent_recipes.ts lib/cli/doctor.ts lib/cli/rules_command.ts lib/agent/agent_cli.ts lib/agent/answer_client.ts \
                lib/ask/ask_program.ts lib/ui/pty_session.ts lib/ask/terminal_ask.ts ffi/seccomp.ts lib/filter/filter_build.ts \
                lib/supervisor/fast_replay.ts lib/sandbox/tty_guard.ts
# The program as bundled modules (helper/bundle/bundle.ts): what the ./hallpass script runs.
SOURCES      := main.ts $(wildcard lib/*.ts lib/*/*.ts lib/*/*/*.ts ffi/*.ts)
# Not fatal: without it the script runs the sources (slower to start).
build/js/main.js: helper/bundle/bundle.ts $(SOURCES) build/deps.stamp | deno
	@$(DENO) run --quiet --allow-all --no-prompt --cached-only helper/bundle/bundle.ts >build/bundle.log 2>&1 \
	  || { rm -rf build/js; cat build/bundle.log; echo "make: bundling failed (above): ./hallpass runs the sources" >&2; }

# ./hallpass: the compiled single binary where `deno compile` can get its runtime (DENORT_BIN or Deno's
# download server), otherwise a small static program that runs the same code with `deno run` (the bundle, or the
# sources changed since: helper/bundle/hallpass_stub.c; the sh script helper/bundle/hallpass.sh.in if it does not build).
# A C string of a make value (for -D).
cstr = "$(subst ",\",$(subst \,\\,$(1)))"
hallpass: build/hallpass-launcher build/libhallpass-fastpath.so build/libhallpass-relay.so build/libhallpass-start.so build/filter.bpf build/deps.stamp $(DENO) $(SOURCES) build/js/main.js helper/bundle/hallpass_stub.c helper/bundle/hallpass.sh.in deno.json runtime.lock
	@if timeout 120 $(DENO) compile --quiet --allow-all $(RUNTIME_LOCK) --v8-flags=$(V8_FLAGS) --include build/hallpass-launcher --include build/libhallpass-fastpath.so --include build/libhallpass-relay.so --include build/libhallpass-start.so --include build/filter.bpf --include build/filter-connect.bpf --include build/syscall-numbers.json --include lib/supervisor/worker.ts $(addprefix --include ,$(LAZY_MODULES)) -o build/hallpass-compiled main.ts >build/compile.log 2>&1 \
	    && ! build/hallpass-compiled --version 2>&1 | grep -q '^deno '; then \
	  cp build/hallpass-compiled hallpass; echo "make: ./hallpass is the compiled binary (deno compile)"; \
	elif rm -f hallpass && $(MUSL_CC) $(CFLAGS_STATIC) -DHP_ROOT='$(call cstr,$(CURDIR))' -DHP_DENO='$(call cstr,$(DENO))' \
	    -DHP_V8_FLAGS='$(call cstr,$(V8_FLAGS))' -o hallpass helper/bundle/hallpass_stub.c >build/stub.log 2>&1; then \
	  strip hallpass 2>/dev/null || true; \
	  echo "make: ./hallpass runs the bundle (build/js; the sources when changed since) with deno run (deno compile could not get its runtime: see build/compile.log)"; \
	else \
	  sed -e 's|@DENO@|$(DENO)|' -e 's|@ROOT@|$(CURDIR)|' -e 's|@V8_FLAGS@|$(V8_FLAGS)|' helper/bundle/hallpass.sh.in > hallpass; \
	  chmod +x hallpass; echo "make: ./hallpass is a script running the bundle (build/js; the sources when changed since) with deno run (deno compile could not get its runtime: see build/compile.log; the program in helper/bundle/hallpass_stub.c did not build: see build/stub.log)"; \
	fi

# Before saying done: hallpass's packages are in this user's Deno cache (make may have run as another user
# before), ./hallpass starts, and runs a command in the sandbox (Landlock and seccomp work here).
verify: hallpass
	@$(DENO) cache $(RUNTIME_LOCK) main.ts lib/supervisor/worker.ts >build/cache.log 2>&1 \
	  || { cat build/cache.log; echo "make: deno could not fetch hallpass's packages (above)" >&2; exit 1; }
	@v=$$(./hallpass --version 2>&1) || { echo "$$v"; echo "make: ./hallpass --version failed (above)" >&2; exit 1; }; \
	d=$$(mktemp -d); out=$$(cd "$$d" && "$(CURDIR)/hallpass" --no-ask -- true 2>&1); rc=$$?; rm -rf "$$d"; \
	if [ $$rc != 0 ]; then echo "$$out"; \
	  echo "make: ./hallpass built, but a sandboxed 'true' failed (exit $$rc, above): ./hallpass doctor says why" >&2; exit 1; fi; \
	echo "make: done: $$v; ./hallpass --no-ask -- true ran in the sandbox"

# The shell's own exit status is not make's failure (only hallpass's own, 125, is). Run from source, hallpass
# protects its checkout (docs/threat-model.md, "hallpass's own program"): said first, as writes here ask.
run: all
	@[ "$$(stat -c %s hallpass)" -gt 1048576 ] || echo "make: in this checkout writes ask (hallpass's own program, run from source); in your projects they go through"
	@echo "./hallpass   # a sandboxed shell here; exit leaves it"
	@./hallpass; rc=$$?; [ $$rc != 125 ] || exit 125

test: test-deps
	@bash tests/run_all.sh

# What only the tests need: their packages, and the tests' npm packages in the cache tests/run_all.sh uses.
test-deps: all
	@$(MAKE) --no-print-directory deps APT_PKGS="$(TEST_PKGS)"
	@DENO_DIR="$(TOOLS)/deno_dir" $(DENO) cache --frozen tests/ >build/cache-tests.log 2>&1 \
	  || { cat build/cache-tests.log; echo "make: deno could not fetch the tests' packages (above)" >&2; exit 1; }

bench: all
	@$(MAKE) --no-print-directory deps APT_PKGS="$(BENCH_PKGS)"
	@bash bench/run.sh

# Fast checks, before the tests (.ci/run): formatting, lint, and a type-check of every .ts file in the tree
# (`.`, less deno.json's exclude: the Worker's modules, loaded by URL, and lazily imported ones are never reached
# from main.ts; tests/, helper/ and bench/ too), lockfiles frozen.
check: deno
	$(DENO) fmt --check
	$(DENO) lint
	$(DENO) check --quiet --frozen .
	$(DENO) cache --quiet $(RUNTIME_LOCK) main.ts lib/supervisor/worker.ts $(LAZY_MODULES)

fmt: deno
	$(DENO) fmt

install: all
	install -d $(PREFIX)/bin
	install -m 755 hallpass-request $(PREFIX)/bin/hallpass-request
	@if head -c 2 hallpass | grep -q '#!'; then \
	  printf '#!/bin/sh\nexec "%s" "$$@"\n' "$(CURDIR)/hallpass" > $(PREFIX)/bin/hallpass; chmod 755 $(PREFIX)/bin/hallpass; \
	else install -m 755 hallpass $(PREFIX)/bin/hallpass; fi
	@echo "make: installed hallpass and hallpass-request to $(PREFIX)/bin"

clean:
	rm -rf build hallpass hallpass-request
