# hallpass — build, run, test.
#   make          install what is missing, build the launcher, hallpass-request and ./hallpass
#   make run      ... and start a sandboxed shell in the current directory
#   make test     every test (unit, kernel, end-to-end as an unprivileged user)
#   make bench    the performance table (docs/performance.md)
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
# What only the tests need: container runtimes and busybox for hallpass agent, a browser for its web page.
TEST_PKGS    := runc crun busybox-static chromium containerd
BENCH_PKGS   := time bubblewrap
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps deno run test bench install clean check fmt hallpass-request
all: deps build/hallpass-launcher build/libhallpass-fastpath.so build/filter.bpf hallpass-request hallpass

# Debian/Ubuntu packages the build and the tests use, installed only when missing.
deps:
	@missing=""; for p in $(APT_PKGS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@$(MAKE) --no-print-directory deno

# A pinned Deno from the npm registry (JSR and Deno's download server are not needed).
deno: $(DENO)
$(DENO):
	@mkdir -p $(TOOLS)
	@echo "make: installing deno $(DENO_VERSION) from the npm registry into .tools/"
	@cd $(TOOLS) && npm install --silent --no-audit --no-fund deno@$(DENO_VERSION) >/dev/null
	@$(DENO) --version | head -1

build/hallpass-launcher: helper/launcher/launcher.c
	@mkdir -p build
	$(MUSL_CC) $(CFLAGS_STATIC) -o $@ $<
	@strip $@ 2>/dev/null || true

# The seccomp filter, compiled once here (lib/filter_build.ts): hallpass reads it instead of compiling at start-up.
build/filter.bpf: lib/filter_plan.ts lib/syscall_table.ts lib/filter_build.ts lib/filter_files.ts ffi/seccomp.ts helper/bpf/prebuild.ts | deno
	@mkdir -p build
	$(DENO) run --quiet --allow-all --no-prompt --cached-only helper/bpf/prebuild.ts build >/dev/null

# The supervisor's fast path (docs/performance.md): loaded by the Deno process, so built against its libc.
build/libhallpass-fastpath.so: helper/fastpath/fastpath.c
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

# ./hallpass: the compiled single binary where `deno compile` can get its runtime (DENORT_BIN or Deno's
# download server), otherwise a script that runs the same code with `deno run`.
hallpass: build/hallpass-launcher build/libhallpass-fastpath.so build/filter.bpf $(DENO) main.ts $(wildcard lib/*.ts lib/*/*.ts ffi/*.ts) deno.json
	@$(DENO) install --quiet --entrypoint main.ts >/dev/null 2>&1 || $(DENO) cache --quiet main.ts
	@if timeout 120 $(DENO) compile --quiet --allow-all --v8-flags=$(V8_FLAGS) --include build/hallpass-launcher --include build/libhallpass-fastpath.so --include build/filter.bpf --include build/filter-connect.bpf --include lib/supervisor/worker.ts -o build/hallpass-compiled main.ts >build/compile.log 2>&1 \
	    && ! build/hallpass-compiled --version 2>&1 | grep -q '^deno '; then \
	  cp build/hallpass-compiled hallpass; echo "make: ./hallpass is the compiled binary (deno compile)"; \
	else \
	  printf '#!/bin/sh\n# hallpass, run from source with the pinned deno (deno compile could not get its runtime here)\nexec "%s" run --quiet --allow-all --no-prompt --cached-only --v8-flags=$(V8_FLAGS) "%s/main.ts" "$$@"\n' "$(DENO)" "$(CURDIR)" > hallpass; \
	  chmod +x hallpass; echo "make: ./hallpass is a script running main.ts with deno run (deno compile could not get its runtime: see build/compile.log)"; \
	fi

run: all
	./hallpass

test: all
	@$(MAKE) --no-print-directory deps APT_PKGS="$(TEST_PKGS)"
	@bash tests/run_all.sh

bench: all
	@$(MAKE) --no-print-directory deps APT_PKGS="$(BENCH_PKGS)"
	@bash bench/run.sh

check: deno
	$(DENO) fmt --check && $(DENO) lint && $(DENO) check main.ts

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
