#!/bin/sh
# questions.sh HALLPASS — how many questions an ordinary session asks (git, npm, node, python, bash, ssh), and
# which, with an --ask-program that answers "once" and records each question. For "the question count must not
# go up" (bench/README.md, connects and sends): run it with the hallpass before and after a change.
HP=${1:?usage: bench/questions.sh HALLPASS}
D=$(mktemp -d); mkdir "$D/p"; cd "$D/p" || exit 1
printf '#!/bin/sh\ncat >> %s/q.jsonl; echo >> %s/q.jsonl; echo once\n' "$D" "$D" > "$D/ask.sh"; chmod +x "$D/ask.sh"
"$HP" --ask-program "$D/ask.sh" -- /bin/sh -c '
git init -q . && git -c user.email=a@b -c user.name=n commit -q --allow-empty -m x && git status --short >/dev/null
npm init -y >/dev/null && npm --version >/dev/null
node -e "require(\"os\").userInfo(); require(\"dns\").lookup(\"localhost\", () => {})"
python3 -c "import pwd, socket; pwd.getpwuid(0); socket.getaddrinfo(\"localhost\", 80)"
bash -i -c "id; ls ~; whoami" </dev/null >/dev/null 2>&1
ssh -o BatchMode=yes -o ConnectTimeout=1 127.0.0.1 true 2>/dev/null
true' >/dev/null 2>&1
echo "$(grep -c '"op"' "$D/q.jsonl" 2>/dev/null || echo 0) questions"
python3 -c 'import json, sys; [print(q["op"], q["target"]) for q in map(json.loads, filter(str.strip, open(sys.argv[1])))]' \
  "$D/q.jsonl" 2>/dev/null | sort | uniq -c | sort -rn
rm -rf "$D"
