import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkBashCommand, type BashPolicyOptions } from './bash-policy.js';
import { listDirectory, resolvePhysicalPath } from './jail.js';
import type { JailCode, JailDecision } from './types.js';

// A real directory tree (symbolic links are resolved for real); no git needed for the static checker.
const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-bash-policy-')));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const root = path.join(scratch, 'wt');
const outside = path.join(scratch, 'outside');
const mainCheckout = path.join(scratch, 'main');
for (const directory of [path.join(root, 'src'), path.join(root, '.git', 'hooks'), path.join(root, 'docs'), outside, path.join(mainCheckout, 'docs', 'IMPL')]) mkdirSync(directory, { recursive: true });
for (const file of ['src/a.ts', 'src/b.ts', 'README.md', 'package.json']) writeFileSync(path.join(root, file), 'x\n');
writeFileSync(path.join(outside, 'secret'), 'secret\n');
writeFileSync(path.join(mainCheckout, 'docs', 'IMPL', 'IMPL-demo.yaml'), 'title: demo\n');
symlinkSync(outside, path.join(root, 'out-link'));
symlinkSync(path.join(root, 'src'), path.join(root, 'in-link'));
symlinkSync('../../outside/secret', path.join(root, 'src', 'rel-out'));

const owned = new Set(['src/a.ts', 'src/owned.ts']);
const checkWritePath = (relative: string): JailDecision =>
  owned.has(relative) || relative === 'src' || relative === '' ? { allowed: true } : { allowed: false, code: 'JAIL_NOT_OWNED', reason: `"${relative}" is not owned (I1 ownership).` };
const options: BashPolicyOptions = { root, branch: 'polywave/demo/wave1-agent-A', resolvePath: resolvePhysicalPath, checkWritePath, listDirectory };
const check = (command: string, extra: Partial<BashPolicyOptions> = {}) => checkBashCommand(command, { ...options, ...extra });

const allowed: string[] = [
  'npm test',
  'npx vitest run src/a.test.ts',
  'npm test 2>&1 | tail -20',
  'npm run build -- --watch=false',
  'node -e "console.log(1+1)"',
  'node -p "[1,2].map((x) => x * 2)"',
  'python3 -c "print(1)"',
  'ls src',
  'ls -la',
  'cat src/a.ts | grep x',
  'grep -rn "foo" src',
  'grep -rn "/api/" src',
  'rg -n "TODO" src',
  'git status',
  'git diff',
  'git diff HEAD~1 -- src/a.ts',
  'git diff --stat HEAD~1..HEAD',
  'git log --oneline -5',
  'git log --grep=/api main..HEAD',
  'git show HEAD:src/a.ts',
  'git add src/a.ts && git commit -m "x"',
  'git commit -am "msg"',
  'git commit -m "Add /health route"',
  'git add -A',
  'git add .',
  'git checkout -- src/a.ts',
  'git checkout HEAD -- src/a.ts',
  'git restore src/a.ts',
  'git reset',
  'git reset HEAD src/a.ts',
  'git reset -- src/a.ts',
  'git branch --show-current',
  'git branch -a',
  'git config --get user.name',
  'git rev-parse --show-toplevel',
  'git ls-files',
  'git grep -n foo',
  'git grep "/path/" -- src',
  'git blame src/a.ts',
  'git mv src/a.ts src/owned.ts',
  'git --no-pager log -1',
  'echo hi > src/owned.ts',
  'echo hi >> src/a.ts',
  'echo hi > /dev/null',
  'npm test > /dev/null 2>&1',
  'echo oops >&2',
  'rm src/owned.ts',
  'touch src/a.ts',
  'mkdir -p src/util',
  'cd src && ls',
  'cd src && cat ../README.md',
  '(cd src && npm test)',
  'cd in-link && ls',
  'cat in-link/a.ts',
  `cd ${root}/src && ls`,
  `cat ${root}/src/a.ts`,
  'for f in src/*.ts; do wc -l "$f"; done',
  'for i in 1 2 3; do echo $i; done',
  'while read line; do echo "$line"; done < src/a.ts',
  'if [ -f src/a.ts ]; then echo yes; else echo no; fi',
  '[[ -f src/a.ts && -n "$X" ]] && echo ok',
  'test -d src && echo ok',
  'case "$1" in a) echo a;; *) echo other;; esac',
  'find . -name "*.ts" -not -path "./node_modules/*"',
  'find . -path ./.git -prune -o -type f -print',
  'find src -type f | xargs wc -l',
  'find src -name "*.ts" -exec grep -l foo {} \\;',
  "sed -n '1,20p' src/a.ts",
  "sed -i 's/foo/bar/g' src/a.ts",
  "sed -n '/^export/p' src/a.ts",
  "sed 's|/usr/local|/opt|g; s/new/old/; /here/d' src/a.ts",
  "sed -n '/start/,/end/{p;}' src/a.ts",
  "sed -e '1i\\header' -e '$a footer' src/a.ts",
  "sed 'y/abc/xyz/' src/a.ts",
  "perl -ne 'print if /foo/' src/a.ts",
  "node -e \"console.log('abc'.replace(/b/g, 'x'))\"",
  "awk '{print $1}' src/a.ts",
  "awk '$3 > 100' src/a.ts",
  'echo "$?"',
  'printf "%s\\n" hello',
  'export FOO=bar && echo $FOO',
  'FOO=bar npm test',
  'NODE_OPTIONS=--max-old-space-size=4096 npm test',
  'timeout 60 npm test',
  'env NODE_ENV=test npm test',
  'command -v node',
  'which node',
  'true && false || echo recovered',
  'echo $(date)',
  'echo `date`',
  'x=$((1+2)); echo $x',
  'echo $(( (1 + 2) * 3 ))',
  '(( (x + 1) > 2 )) && echo big',
  '((x = 1 + 2)); echo $x',
  'diff <(cat src/a.ts) <(cat src/b.ts)',
  '/usr/bin/env node -e "1"',
  './node_modules/.bin/vitest run',
  'ls src/*.ts',
  'cat src/{a,b}.ts',
  'echo {1..5}',
  'jq . package.json',
  'curl -s https://example.com/api',
  'wc -l src/*.ts | sort -n',
  "cat <<'EOF' > src/a.ts\nhello $HOME ~ /etc/passwd\nEOF",
  'cat <<EOF > src/a.ts\nhello $(date)\nEOF\necho done',
  'echo \'a/../b\'',
  'bash -c "npm test && echo ok"',
  'sh scripts/check.sh',
  'echo ok # cd / in a comment',
  'git diff --no-index src/a.ts src/b.ts',
  'ls -a | grep -v "^\\.$"',
  'npm test -- --reporter=dot; echo "exit $?"',
  'cat src/a.*',
  'wc -l src/[ab].ts',
  'time -p npm test',
  'npx vitest run',
  'npm exec -- vitest run',
  'echo x > src/owned.ts && git add src/owned.ts',
  'make CC=gcc',
  // git configuration that runs nothing (the false positive of the hand-written checker)
  'git -c user.name=x commit -m msg',
  'git -c user.name="A B" -c user.email=a@b.c commit -m "msg"',
  'git -c color.ui=never status',
  'git -c k=v status',
  'git -c core.quotepath=off diff --stat',
  'git --no-pager -c log.showSignature=false log -1',
  // forms the hand-written lexer refused as "not supported" and the parser now checks
  'eval "ls"', // eval with literal arguments is re-parsed (was refused outright)
  'eval ls src',
  'eval "cd src" && cat ../README.md', // eval runs in this shell: its cd is tracked
  'function f { ls; }', // function bodies are walked (were refused outright)
  'f() { ls src; }; f',
  'a=(1 2)', // array assignments are checked (were refused outright)
  'declare -a files=(src/a.ts src/b.ts); echo "${files[@]}"',
  'for ((i = 0; i < 3; i++)); do echo $i; done', // C-style for loops (were refused)
  'echo ${x:-$(date)}', // a substitution inside ${…} is walked (was refused)
  'echo "$(echo ")")"',
  'echo $(case x in a) echo a;; *) echo b;; esac)',
  'echo $"translated"',
  'select x in a b; do break; done',
  'until false; do break; done',
  '[ -f src/a.ts ] && [[ -n "$X" || ! -d src ]]',
  'echo {a..c} src/{a,b}.ts',
  'cat <<EOF | grep x\nhello\nEOF',
  "cat > src/owned.ts <<'EOF' && npm test\nexport const x = `${a}`;\nEOF",
  "git commit -m \"$(cat <<'EOF'\nSubject\n\nBody with $HOME and ../x\nEOF\n)\"",
  'while read -r line; do echo "$line"; done < src/a.ts',
  'ls | while read -r f; do wc -l "$f"; done',
  'x=$((1 + 2)) && echo "$x" &',
  'diff <(git show HEAD:src/a.ts) src/a.ts',
  '! grep -q foo src/a.ts',
  'git status 2>&1 >/dev/null src', // bash: git status src
  "cat <<'EOF' > src/owned.ts\n`git push` $(cd /)\nEOF",
  'echo "a\\`b" \'`c`\'',
  'echo `date` "`date`"',
  'export NODE_ENV=test X="$(pwd)" && command export Y=1',
  'time (npm test)',
  'time -p npm test',
];

const denied: Array<[string, JailCode?]> = [
  ['cd /', 'JAIL_BASH_ESCAPE'],
  ['cd', 'JAIL_BASH_ESCAPE'],
  ['cd ~', 'JAIL_BASH_ESCAPE'],
  ['cd ..', 'JAIL_BASH_ESCAPE'],
  ['cd -', 'JAIL_BASH_ESCAPE'],
  ['cd $HOME', 'JAIL_BASH_ESCAPE'],
  ['cd "$HOME/x"', 'JAIL_BASH_ESCAPE'],
  ['cd /tmp', 'JAIL_BASH_ESCAPE'],
  ['cd src; cd ..', 'JAIL_BASH_ESCAPE'], // cd src may fail: cd .. then leaves the root
  ['cd src || cd ..', 'JAIL_BASH_ESCAPE'],
  ['cd src/../..', 'JAIL_BASH_ESCAPE'],
  ['cd src && cd ../..', 'JAIL_BASH_ESCAPE'],
  ['cd out-link', 'JAIL_BASH_ESCAPE'],
  ['cd .. && touch x', 'JAIL_BASH_ESCAPE'],
  ['pushd /', 'JAIL_BASH_ESCAPE'],
  ['cd $X', 'JAIL_BASH_ESCAPE'],
  ['cat out-link/secret', 'JAIL_BASH_ESCAPE'],
  ['cat src/rel-out', 'JAIL_BASH_ESCAPE'],
  ['cat in-link/../../outside/secret', 'JAIL_BASH_ESCAPE'],
  ['cat /etc/passwd', 'JAIL_BASH_ESCAPE'],
  ['ls /', 'JAIL_BASH_ESCAPE'],
  ['cat ../x', 'JAIL_BASH_ESCAPE'],
  ['echo x > ../x', 'JAIL_BASH_ESCAPE'],
  ['echo x > /tmp/x', 'JAIL_BASH_ESCAPE'],
  ['echo x > $HOME/x', 'JAIL_BASH_ESCAPE'],
  ['echo x > ${TMPDIR}/x', 'JAIL_BASH_ESCAPE'],
  ['echo x > "$TMPDIR/x"', 'JAIL_BASH_ESCAPE'],
  ['echo $HOME', 'JAIL_BASH_ESCAPE'],
  ['touch ~/x', 'JAIL_BASH_ESCAPE'],
  ['echo x > ~/x', 'JAIL_BASH_ESCAPE'],
  ['echo x >| ../x', 'JAIL_BASH_ESCAPE'],
  ['echo x &> /tmp/x', 'JAIL_BASH_ESCAPE'],
  ['cat < /etc/passwd', 'JAIL_BASH_ESCAPE'],
  ['cp src/a.ts /tmp/', 'JAIL_BASH_ESCAPE'],
  ['echo x | tee ../x', 'JAIL_BASH_ESCAPE'],
  ['ln -s /etc x', 'JAIL_BASH_ESCAPE'],
  ['ln -s ../.. x', 'JAIL_BASH_ESCAPE'],
  ['ln -s .. src/owned.ts', 'JAIL_BASH_ESCAPE'],
  ['cat $(echo /etc/passwd)', 'JAIL_BASH_ESCAPE'],
  ['cat "$(pwd)/../x"', 'JAIL_BASH_UNSAFE'],
  ['cat $X/y', 'JAIL_BASH_ESCAPE'],
  ['rm -rf $X', 'JAIL_BASH_ESCAPE'],
  ['echo x > $F', 'JAIL_BASH_ESCAPE'],
  ['X=/etc; cat $X', 'JAIL_BASH_ESCAPE'],
  ['X=..; ls $X', 'JAIL_BASH_ESCAPE'],
  ['PATH=~/bin:$PATH npm test', 'JAIL_BASH_ESCAPE'],
  ["cat $'\\x2fetc\\x2fpasswd'", 'JAIL_BASH_ESCAPE'],
  ["cat $'\\x2e\\x2e/x'", 'JAIL_BASH_ESCAPE'],
  ['cat .*/passwd', 'JAIL_BASH_ESCAPE'],
  ['cat {..,src}/x', 'JAIL_BASH_ESCAPE'],
  ['echo x > src/b.ts', 'JAIL_NOT_OWNED'],
  ['rm src/b.ts', 'JAIL_NOT_OWNED'],
  ["sed -i 's/a/b/' src/b.ts", 'JAIL_NOT_OWNED'],
  ['mv src/a.ts src/b.ts', 'JAIL_NOT_OWNED'],
  ['cp src/a.ts src/b.ts', 'JAIL_NOT_OWNED'],
  ['git add src/b.ts', 'JAIL_NOT_OWNED'],
  ['git commit -m x src/b.ts', 'JAIL_NOT_OWNED'],
  ['git checkout main -- src/b.ts', 'JAIL_NOT_OWNED'],
  ['curl -o src/b.ts https://example.com', 'JAIL_NOT_OWNED'],
  ['echo x > .git/config', 'JAIL_GIT_INTERNALS'],
  ['cat .git/config', 'JAIL_GIT_INTERNALS'],
  ['echo x > .git/hooks/pre-commit', 'JAIL_GIT_INTERNALS'],
  ['cd .git && echo x > config', 'JAIL_GIT_INTERNALS'],
  ['ls .g*', 'JAIL_GIT_INTERNALS'],
  ['sudo ls', 'JAIL_BASH_UNSAFE'],
  ['su -c ls', 'JAIL_BASH_UNSAFE'],
  ['chroot / ls', 'JAIL_BASH_UNSAFE'],
  ['exec ls', 'JAIL_BASH_UNSAFE'],
  ['exec 3> /tmp/x', 'JAIL_BASH_UNSAFE'],
  ['source x.sh', 'JAIL_BASH_UNSAFE'],
  ['. ./x.sh', 'JAIL_BASH_UNSAFE'],
  ['$(echo rm) -rf x', 'JAIL_BASH_UNSAFE'],
  ["echo 'unterminated", 'JAIL_BASH_UNSAFE'],
  ['echo "unterminated', 'JAIL_BASH_UNSAFE'],
  ['echo $(ls', 'JAIL_BASH_UNSAFE'],
  ['cat <<EOF\nno end', 'JAIL_BASH_UNSAFE'],
  ['cat <<EOF > /tmp/x\nhello\nEOF', 'JAIL_BASH_ESCAPE'],
  ['bash -c "cd / && ls"', 'JAIL_BASH_ESCAPE'],
  ["sh -c 'cat /etc/passwd'", 'JAIL_BASH_ESCAPE'],
  ["bash -c 'bash -c \"cd ..\"'", 'JAIL_BASH_ESCAPE'],
  ["echo 'cd /' | bash", 'JAIL_BASH_UNSAFE'],
  ['bash -c "$CMD"', 'JAIL_BASH_UNSAFE'],
  ['bash -s < script.sh', 'JAIL_BASH_UNSAFE'],
  [`node -e "require('fs').writeFileSync('/tmp/x','y')"`, 'JAIL_BASH_ESCAPE'],
  [`node -e "require('child_process').execSync('git push')"`, 'JAIL_BASH_UNSAFE'],
  [`node -e "process.chdir('..')"`, 'JAIL_BASH_ESCAPE'],
  [`python3 -c "import os; os.system('ls')"`, 'JAIL_BASH_UNSAFE'],
  [`python3 -c "open(os.path.expanduser('~/.ssh/id_rsa'))"`, 'JAIL_BASH_ESCAPE'],
  [`python3 -c "open('../x', 'w')"`, 'JAIL_BASH_ESCAPE'],
  ['echo "print(1)" | python3', 'JAIL_BASH_UNSAFE'],
  ['python3 - <<EOF\nprint(1)\nEOF', 'JAIL_BASH_UNSAFE'],
  ['HOME=/tmp git commit -m x', 'JAIL_BASH_ESCAPE'],
  ['export HOME=/tmp', 'JAIL_BASH_ESCAPE'],
  ['unset HOME', 'JAIL_BASH_ESCAPE'],
  ['GIT_DIR=../repo/.git git log', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['POLYWAVE_ALLOW_MAIN_COMMIT=1 git commit -m x', 'JAIL_BASH_UNSAFE'],
  ['BASH_ENV=x.sh bash -c ls', 'JAIL_BASH_UNSAFE'],
  ["PS4='$(rm x)' bash -xc ls", 'JAIL_BASH_UNSAFE'],
  ['IFS=/ read a b', 'JAIL_BASH_UNSAFE'],
  ['git stash', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git stash list', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git checkout main', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git checkout -b x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git checkout --ignore-other-worktrees main', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git checkout -b x -- src/a.ts', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git switch -c other', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git push origin HEAD:main', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git pull', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git fetch', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git rebase main', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git merge main', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git cherry-pick main', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git reset --hard HEAD~1', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git reset --soft HEAD~1', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git reset HEAD~1', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git reset main', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git branch -f main HEAD', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git branch -D x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git branch -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git branch newbranch', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git update-ref refs/heads/main HEAD', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git symbolic-ref HEAD refs/heads/main', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git worktree add ../x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git clean -fd', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -C ../repo commit -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git --git-dir=../repo/.git log', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git --work-tree=.. status', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c core.hooksPath=/dev/null commit -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git config core.hooksPath /dev/null', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git config user.name x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git config --unset user.name', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git commit --no-verify -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git commit -nm x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git commit --amend -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git tag v1', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git notes add -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git filter-branch --all', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git replace a b', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git grep -O vim foo', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git some-alias', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['command git push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['env git push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['/usr/bin/git push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['g\\it push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['"git" push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['echo | xargs git push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['find . -exec git push \\;', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['timeout 5 git stash', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['echo $(git stash)', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['find / -name x', 'JAIL_BASH_ESCAPE'],
  ['find -L . -name x', 'JAIL_BASH_ESCAPE'],
  ['grep -R x .', 'JAIL_BASH_ESCAPE'],
  ['timeout 5 cat /etc/passwd', 'JAIL_BASH_ESCAPE'],
  ['env -C / ls', 'JAIL_BASH_UNSAFE'],
  ['for i in 1 2; do cd src; done', 'JAIL_BASH_UNSAFE'],
  ['f() { cd /; }; f', 'JAIL_BASH_UNSAFE'],
  ["trap 'rm -rf x' EXIT", 'JAIL_BASH_UNSAFE'],
  [`awk 'BEGIN{system("ls")}'`, 'JAIL_BASH_UNSAFE'],
  [`awk '{print > "/tmp/x"}' src/a.ts`, 'JAIL_BASH_UNSAFE'],
  ["sed 's/a/b/w /tmp/x' src/a.ts", 'JAIL_BASH_UNSAFE'],
  ["sed '1e ls' src/a.ts", 'JAIL_BASH_UNSAFE'],
  ["sed 's|a|b|gw/tmp/x' src/a.ts", 'JAIL_BASH_UNSAFE'],
  ["sed '/x/w /tmp/out' src/a.ts", 'JAIL_BASH_UNSAFE'],
  ["sed -e 's/a/b/' -e '1r /etc/passwd' src/a.ts", 'JAIL_BASH_UNSAFE'],
  ["sed 's/a/b/e' src/a.ts", 'JAIL_BASH_UNSAFE'],
  ['sed -f script.sed src/a.ts', 'JAIL_BASH_UNSAFE'],
  ['ruby -e "File.write(%q(/etc/x), 1)"', 'JAIL_BASH_ESCAPE'],
  ['perl -e "open(F, q(>/etc/x))"', 'JAIL_BASH_ESCAPE'],
  ["sed -n '1p' /etc/passwd", 'JAIL_BASH_ESCAPE'],
  ['pkill node', 'JAIL_BASH_UNSAFE'],
  ['kill -9 -1', 'JAIL_BASH_UNSAFE'],
  ['nohup npm start &', 'JAIL_BASH_UNSAFE'],
  ['setsid npm start', 'JAIL_BASH_UNSAFE'],
  ['shopt -s dotglob', 'JAIL_BASH_UNSAFE'],
  ['tar -xf x.tar -C /', 'JAIL_BASH_ESCAPE'],
  ['tar -P -xf x.tar', 'JAIL_BASH_ESCAPE'],
  ['rsync -e ssh a b', 'JAIL_BASH_UNSAFE'],
  ['curl -o /tmp/x https://example.com', 'JAIL_BASH_ESCAPE'],
  ['npm install ..', 'JAIL_BASH_ESCAPE'],
  ['make -C ..', 'JAIL_BASH_ESCAPE'],
  ['gcc -o/tmp/x a.c', 'JAIL_BASH_ESCAPE'],
  ['npm test --prefix=../other', 'JAIL_BASH_ESCAPE'],
  ['cat ${X:-/etc/passwd}', 'JAIL_BASH_ESCAPE'],
  ['echo ${X/a/b}', 'JAIL_BASH_ESCAPE'],
  ['for HOME in /tmp; do ls; done', 'JAIL_BASH_ESCAPE'],
  ['read -r HOME < src/a.ts', 'JAIL_BASH_ESCAPE'],
  ['echo x > "$(mktemp)"', 'JAIL_BASH_UNSAFE'],
  ['cp src/a.ts $(mktemp -d)', 'JAIL_BASH_UNSAFE'],
  ['ln -s "$(pwd)" x', 'JAIL_BASH_UNSAFE'],
  ['echo ok )', 'JAIL_BASH_UNSAFE'],
  ['cat /proc/self/environ', 'JAIL_BASH_ESCAPE'],
  [`echo ${'x'.repeat(100_001)}`, 'JAIL_BASH_UNSAFE'],
  ['{eval,ls}', 'JAIL_BASH_UNSAFE'],
  // bash reads "((" as nested subshells when it cannot be arithmetic; neither parser follows
  // that (mvdan/sh: "not valid bash"), so these are refused as unparsable (were JAIL_BASH_ESCAPE)
  ['((cd .. && touch x) )', 'JAIL_BASH_UNSAFE'],
  ['echo $((cd .. && touch x) )', 'JAIL_BASH_UNSAFE'],
  ['( (cd .. && touch x) )', 'JAIL_BASH_ESCAPE'],
  ['echo $( (cd .. && touch x) )', 'JAIL_BASH_ESCAPE'],
  ['((x = $(cd ..; echo 1)))', 'JAIL_BASH_ESCAPE'],
  ['gi? push', 'JAIL_BASH_UNSAFE'],
  ['git reset HEAD {--hard,x}', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['cat src/*', 'JAIL_BASH_ESCAPE'], // src/rel-out points outside
  ['tee src/*'],
  ['rm src/*.ts', 'JAIL_NOT_OWNED'],
  ['ssh localhost ls', 'JAIL_BASH_UNSAFE'],
  ['vim src/a.ts', 'JAIL_BASH_UNSAFE'],
  [`npx node -e "require('fs').writeFileSync('/tmp/x','')"`, 'JAIL_BASH_ESCAPE'],
  [`npm exec -- node -e "require('child_process').execSync('x')"`, 'JAIL_BASH_UNSAFE'],
  ['npm install -g left-pad', 'JAIL_BASH_ESCAPE'],
  ['gh pr checkout 1', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git-receive-pack .', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['ln -s .. src/up', 'JAIL_BASH_ESCAPE'],
  ['ln -s . here', 'JAIL_BASH_ESCAPE'],
  [`ln -s ${root} here`, 'JAIL_BASH_ESCAPE'],
  ['declare -n ref=HOME', 'JAIL_BASH_UNSAFE'],
  ["mapfile -C 'cd /' -c 1 lines < src/a.ts", 'JAIL_BASH_UNSAFE'],
  ['echo a=~/x', 'JAIL_BASH_ESCAPE'],
  ['make PREFIX=~/x install', 'JAIL_BASH_ESCAPE'],
  [`node -e "require('fs').symlinkSync('.', 'l')"`, 'JAIL_BASH_UNSAFE'],
  ['cat <<EOF\n$(cd /; ls)\nEOF', 'JAIL_BASH_ESCAPE'],
  ['time -p cd ..', 'JAIL_BASH_ESCAPE'],
  [': > src/b.ts', 'JAIL_NOT_OWNED'],
  ['>src/b.ts', 'JAIL_NOT_OWNED'],
  ['git config --file ../x --get a.b', 'JAIL_BASH_ESCAPE'],
  ['git add src/*.ts', 'JAIL_NOT_OWNED'],
  // git configuration that runs programs or points git elsewhere
  ['git -c core.hooksPath=/x commit -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c Core.HooksPath=/x commit -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c core.fsmonitor=./x status', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c core.sshCommand=x status', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c alias.st=!sh status', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c user.name=x -c alias.x=!id x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c core.pager=./x log', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c include.path=../x status', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c includeIf.onbranch:x.path=../x status', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c diff.x.textconv=./x diff', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c filter.x.clean=./x add src/a.ts', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c credential.helper=./x status', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c gpg.program=./x commit -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c core.worktree=.. status', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git --config-env=core.hooksPath=X commit -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git -c "$X" status', 'JAIL_BASH_UNSAFE'],
  ['GIT_CONFIG_PARAMETERS="\'core.hooksPath\'=\'/x\'" git commit -m x', 'JAIL_BASH_FORBIDDEN_GIT'],
  // eval, functions and arrays are walked now: what they run is checked
  ['eval "cd /; touch pwned"', 'JAIL_BASH_ESCAPE'],
  ['eval git stash', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['eval "$CMD"', 'JAIL_BASH_UNSAFE'],
  ["eval 'cd src'; cat ../../x", 'JAIL_BASH_ESCAPE'],
  ['f() { git stash; }', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['f() { cd src; }; f; cat ../x', 'JAIL_BASH_UNSAFE'],
  ['cd src && f() { cat ../README.md; } && cd .. && f', 'JAIL_BASH_ESCAPE'], // a body may run from any directory seen
  ['f() (cat /etc/passwd)', 'JAIL_BASH_ESCAPE'],
  ['a=(src/a.ts /etc/passwd)', 'JAIL_BASH_ESCAPE'],
  ['declare -a a=(~/x)', 'JAIL_BASH_ESCAPE'],
  ['for ((i = 0; i < $(cd ..; echo 3); i++)); do :; done', 'JAIL_BASH_ESCAPE'],
  ['for ((HOME = 0; HOME < 1; HOME++)); do :; done', 'JAIL_BASH_ESCAPE'],
  ['echo ${x:-$(git stash)}', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['echo $(case x in a) git stash;; esac)', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['[[ -f /etc/passwd ]]', 'JAIL_BASH_ESCAPE'],
  ['[ -f ../x ]', 'JAIL_BASH_ESCAPE'],
  ['select x in /etc/*; do break; done', 'JAIL_BASH_ESCAPE'],
  ['x=$(( $(git stash) + 1 ))', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['diff <(cat /etc/passwd) src/a.ts', 'JAIL_BASH_ESCAPE'],
  ['! cd ..', 'JAIL_BASH_ESCAPE'],
  ['cd src & cat ../README.md', 'JAIL_BASH_ESCAPE'], // a background cd may not have run
  // words tree-sitter hangs on a redirection are the command's words in bash
  ['git > /dev/null push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['> /dev/null git push', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['git 2>&1 >/dev/null stash', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['cat $"/etc/passwd"', 'JAIL_BASH_ESCAPE'],
  // here-documents followed by more of the command line
  ['cat <<EOF && cd ..\nx\nEOF', 'JAIL_BASH_ESCAPE'],
  ['cat <<EOF | python3\nprint(1)\nEOF', 'JAIL_BASH_UNSAFE'],
  ['cat <<EOF | cat && cd ..\nx\nEOF', 'JAIL_BASH_UNSAFE'],
  ['cat <<EOF | tee ../x\nx\nEOF', 'JAIL_BASH_ESCAPE'],
  ["cat <<'EOF' | sh\ncd /\nEOF", 'JAIL_BASH_UNSAFE'],
  ['cat <<EOF\n${x:-$(cd ..)}\nEOF', 'JAIL_BASH_ESCAPE'],
  // substitutions tree-sitter leaves unparsed are re-parsed (nested backticks) or refused
  ['echo `echo \\`git push\\``', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['echo ${x#$(git push)}', 'JAIL_BASH_UNSAFE'],
  ['echo ${x:-`git push`}', 'JAIL_BASH_UNSAFE'],
  ['echo ${x:-$HOME}', 'JAIL_BASH_ESCAPE'],
  ['cat <<EOF\n`git push`\nEOF', 'JAIL_BASH_UNSAFE'],
  // a quoted NAME=value is still an assignment for export/declare/env
  ['export "HOME=/tmp"', 'JAIL_BASH_ESCAPE'],
  ['command export HOME=/tmp', 'JAIL_BASH_ESCAPE'],
  ['builtin declare -n r=HOME', 'JAIL_BASH_UNSAFE'],
  ['env "GIT_DIR=../x" git status', 'JAIL_BASH_FORBIDDEN_GIT'],
  // `time` before a compound command: tree-sitter reads words where bash runs a compound command
  ['time (git push)', 'JAIL_BASH_FORBIDDEN_GIT'],
  ['time (cd .. && ls)', 'JAIL_BASH_ESCAPE'],
  ['time { git push; }', 'JAIL_BASH_UNSAFE'],
  ['time -p for i in 1; do git push; done', 'JAIL_BASH_UNSAFE'],
  ['time if true; then git push; fi', 'JAIL_BASH_UNSAFE'],
  ['echo (x)', 'JAIL_BASH_UNSAFE'],
  // not valid bash, or a form the parser does not follow
  ['fi; echo ok )', 'JAIL_BASH_UNSAFE'],
  ['a && && b', 'JAIL_BASH_UNSAFE'],
  ['cat <<EOF; cd ..\nhi\nEOF', 'JAIL_BASH_UNSAFE'],
  ["bash -c 'echo \"unterminated'", 'JAIL_BASH_UNSAFE'],
];

describe('checkBashCommand: allowed', () => {
  it.each(allowed)('%s', async (command) => {
    const decision = await check(command);
    expect(decision, JSON.stringify(decision)).toEqual({ allowed: true });
  });
});

describe('checkBashCommand: denied', () => {
  it.each(denied)('%s', async (command, code) => {
    const decision = await check(command);
    expect(decision.allowed, `${command} should be denied`).toBe(false);
    if (decision.allowed) return;
    if (code !== undefined) expect(decision.code, decision.reason).toBe(code);
    // one sentence naming the rule
    expect(decision.reason).toMatch(/^bash: .+[.)]$/s);
    expect(decision.reason).toMatch(/E4\/E43|I1|I2|read-only|fail closed|not owned/);
  });
});

describe('checkBashCommand: options', () => {
  it('a read-only role may read but not write', async () => {
    expect(await check('cat src/a.ts && ls', { readOnly: true })).toEqual({ allowed: true });
    expect(await check('npm test > /dev/null', { readOnly: true })).toEqual({ allowed: true });
    expect(await check('echo x > src/a.ts', { readOnly: true })).toMatchObject({ allowed: false, code: 'JAIL_READ_ONLY' });
    expect(await check('git commit -m x', { readOnly: true })).toMatchObject({ allowed: false, code: 'JAIL_READ_ONLY' });
    expect(await check('rm src/a.ts', { readOnly: true })).toMatchObject({ allowed: false, code: 'JAIL_READ_ONLY' });
  });

  it('readable paths outside the root may be read by reading commands, never written', async () => {
    const manifest = path.join(mainCheckout, 'docs', 'IMPL', 'IMPL-demo.yaml');
    const extra = { readablePaths: [manifest] };
    expect(await check(`cat ${manifest}`, extra)).toEqual({ allowed: true });
    expect(await check(`grep title ${manifest}`, extra)).toEqual({ allowed: true });
    expect(await check(`echo x >> ${manifest}`, extra)).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
    expect(await check(`sed -i s/a/b/ ${manifest}`, extra)).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
    expect(await check(`cp ${manifest} src/a.ts`, extra)).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
    expect(await check(`cat ${manifest}`)).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
  });

  it('a refused write after a cd names the path bash would write (the denial record), still checked from every directory', async () => {
    expect(await check('cd src && echo x > b.ts')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED', target: 'src/b.ts' });
    expect(await check('cd src && touch b.ts')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED', target: 'src/b.ts' });
    // the parser hangs the redirection on the whole list, so it is checked from every directory the list may
    // reach, the root included: owned as src/a.ts, refused as a.ts (a false refusal, on the safe side)
    expect(await check('cd src && echo x > a.ts')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED', target: 'a.ts' });
  });

  it('without the file-system hooks the checks are lexical only', async () => {
    expect(await checkBashCommand('cat out-link/secret', { root })).toEqual({ allowed: true });
    expect(await checkBashCommand('echo x > src/b.ts', { root })).toEqual({ allowed: true });
    expect(await checkBashCommand('cat ../x', { root })).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
  });

  it('names the command and the rule in the reason', async () => {
    const decision = await check('cd /');
    expect(decision).toMatchObject({ allowed: false });
    if (!decision.allowed) expect(decision.reason).toBe(`bash: the absolute path "/" in "cd /" is outside the worktree root ${root} (worktree isolation E4/E43).`);
    const stash = await check('git stash');
    if (!stash.allowed) expect(stash.reason).toBe('bash: "git stash" is forbidden for agents: it hides work outside the agent branch (worktree isolation E4/E43).');
  });

  it('says why an unparsable command is refused: not valid bash (mvdan/sh), or a form the parser does not follow', async () => {
    const invalid = await check("echo 'unterminated");
    expect(invalid).toEqual({
      allowed: false,
      code: 'JAIL_BASH_UNSAFE',
      reason: "bash: the command is not valid bash (line 1, column 6: reached EOF without closing quote `'`), so it was refused (fail closed).",
    });
    const nested = await check(`bash -c 'echo "unterminated'`);
    expect(nested).toMatchObject({ allowed: false, code: 'JAIL_BASH_UNSAFE' });
    if (!nested.allowed) expect(nested.reason).toMatch(/^bash: the command string of "bash -c 'echo "unterminated'" is not valid bash \(line 1, column 6: /);
    // valid bash (mvdan/sh parses it) that tree-sitter-bash does not follow
    const unfollowed = await check('cat <<EOF; cd ..\nhi\nEOF');
    expect(unfollowed).toMatchObject({ allowed: false, code: 'JAIL_BASH_UNSAFE' });
    if (!unfollowed.allowed) expect(unfollowed.reason).toMatch(/^bash: the command is valid bash in a form the checker's parser does not follow \(line 1, column \d+, near ".*"\); write it more simply/);
  });

  it('git -c: names the refused configuration key', async () => {
    expect(await check('git -c core.hooksPath=/x commit -m x')).toEqual({
      allowed: false,
      code: 'JAIL_BASH_FORBIDDEN_GIT',
      reason: 'bash: "git -c core.hooksPath" is forbidden for agents: this configuration can run programs or point git at other files, hooks or repositories (worktree isolation E4/E43).',
    });
    // the checks after the global options still apply
    expect(await check('git -c user.name=x push')).toMatchObject({ allowed: false, code: 'JAIL_BASH_FORBIDDEN_GIT' });
    expect(await check('git -c user.name=x add src/b.ts')).toMatchObject({ allowed: false, code: 'JAIL_NOT_OWNED' });
  });

  it('labels a command with a here-document by its first line', async () => {
    const decision = await check('cat <<EOF > /tmp/x\nhello\nEOF');
    expect(decision).toMatchObject({ allowed: false, code: 'JAIL_BASH_ESCAPE' });
    if (!decision.allowed) expect(decision.reason).toBe(`bash: the absolute path "/tmp/x" in "cat <<EOF > /tmp/x EOF" is outside the worktree root ${root} (worktree isolation E4/E43).`);
  });

  it('refuses a relative root and never throws', async () => {
    expect(await checkBashCommand('ls', { root: 'relative' })).toMatchObject({ allowed: false, code: 'JAIL_BASH_UNSAFE' });
    expect(await check('((((((((((((((((((((((((x))))))))))))))))))))))))')).toBeDefined();
    expect(await check('$('.repeat(40) + ')'.repeat(40))).toMatchObject({ allowed: false, code: 'JAIL_BASH_UNSAFE' });
    expect(await check('echo {a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}')).toMatchObject({ allowed: false, code: 'JAIL_BASH_UNSAFE' });
  });
});
