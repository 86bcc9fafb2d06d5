"""Stand-in for ansible-test's get-pip bootstrap script, which it downloads from
ci-files.testing.ansible.com (unreachable here). It seeds pip with the
interpreter's own ensurepip, then installs what ansible-test asked for from PyPI."""

import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'], stdout=subprocess.DEVNULL)
subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
