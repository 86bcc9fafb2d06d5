#!/usr/bin/env bash
# ansible-test (sanity, units) needs the collection at .../ansible_collections/nomad_zfs/csi
# as real files; copy the tracked and new files there and run it.
# Usage: ansible-test.sh sanity|units [ansible-test options]
# It runs the ansible-core of the python3 on PATH (make's: the venv's; scripts/controller-line.sh run's: its line's)
# on that Python, in a venv of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r core python < <(python3 -c 'import ansible, sys; print(ansible.__version__, "%d.%d" % sys.version_info[:2])') \
  || { echo "ansible-test.sh: the python3 on PATH ($(command -v python3)) has no ansible-core" >&2; exit 1; }
# One copy per line, so that no two lines' runs share one.
copy=build/sanity/ansible-core$core-python$python
dest=$copy/ansible_collections/nomad_zfs/csi
rm -rf "$copy" && mkdir -p "$dest"
git ls-files -co --exclude-standard -z | grep -zv '^build/' | rsync -a --from0 --files-from=- ./ "$dest/"
# ansible-test --venv bootstraps pip from ci-files.testing.ansible.com, which is not
# reachable here; a venv of its own (with pip) plus --local --requirements is.
CACHE=${NOMAD_ZFS_CSI_CACHE:-$HOME/.cache/nomad-zfs-csi}
venv=$CACHE/venv-sanity-$(printf '%s %s' "$core" "$(python3 -VV)" | sha256sum | cut -c1-12)
if [ ! -f "$venv/.complete" ]; then
  rm -rf "$venv" && python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip && "$venv/bin/pip" install -q "ansible-core==$core"
  touch "$venv/.complete"
fi
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',$/\1/p" "$venv"/lib/python*/site-packages/ansible_test/_internal/python_requirements.py)
mkdir -p ~/.ansible/test/cache
cp scripts/ansible_test_get_pip.py ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"
cd "$dest"
git init -q . && git add -A >/dev/null
command=$1
shift
exec "$venv/bin/ansible-test" "$command" --local --requirements --python "$python" "$@"
