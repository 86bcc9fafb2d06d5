"""A zfs for unit tests: datasets held in memory, every command recorded, answers in zfs's own formats.

It stands in for the zfs program only, so that main() runs in milliseconds; what real OpenZFS does is
the integration tests' job, on the VM.
"""

from ansible.module_utils import basic

from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_cli import parse_get
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

# Every property of a filesystem, as `zfs get -Hp all` printed them on OpenZFS 2.3.2.
CAPTURED = parse_get((FIXTURES / 'zfs_get_2.3.2.txt').read_text())['tank/fixture/csi']
# `zfs allow tank/fixture/csi` on OpenZFS 2.3.2: the dataset's own section, then its parent's.
CAPTURED_ALLOW = (FIXTURES / 'zfs_allow_2.3.2.txt').read_text()


class FakeZfs(object):
    """{name: {property: [value, source]}}; commands is every argv after 'zfs'."""

    def __init__(self, *names):
        self.datasets, self.commands, self.grants = {}, [], {}
        for name in names:
            self.add(name)

    def add(self, name, kind='filesystem', **local):
        props = dict((k, [v, s]) for k, (v, s) in CAPTURED.items())
        props['type'] = [kind, '-']
        for key, value in local.items():
            props[key] = [value, 'local']
        self.datasets[name] = props
        return self

    def install(self, monkeypatch):
        monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda module, name, **kw: '/usr/sbin/' + name)
        fake = self

        def run_command(module, argv, **kwargs):
            assert isinstance(argv, list), 'zfs must be run with an argv list, never a shell string'
            return fake.answer(argv[1:])

        monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
        return self

    def writes(self):
        """The commands that would change something: every zfs allow with more than a dataset is a write."""
        return [c for c in self.commands if c[0] not in ('get', 'list', 'allow') or (c[0] == 'allow' and len(c) > 2)]

    def answer(self, args):
        self.commands.append(list(args))
        return getattr(self, '_' + args[0])(list(args[1:]))

    @staticmethod
    def _missing(name):
        return 1, '', "cannot open '%s': dataset does not exist\n" % name

    def _get(self, args):
        names, props, types, depth = [], None, None, 0
        while args:
            arg = args.pop(0)
            if arg == '-t':
                types = args.pop(0).split(',')
            elif arg == '-d':
                depth = int(args.pop(0))
            elif arg == '-r':
                depth = -1
            elif arg == '-o':
                args.pop(0)
            elif not arg.startswith('-') and props is None:
                props = arg
            elif not arg.startswith('-'):
                names.append(arg)
        out, err = [], ''
        for root in names:
            if root not in self.datasets:
                err += self._missing(root)[2]
                continue
            for name in self._below(root, depth):
                if types and self.datasets[name]['type'][0] not in types:
                    continue
                for prop, (value, source) in sorted(self.datasets[name].items()):
                    if props == 'all' or prop in props.split(','):
                        out.append('\t'.join((name, prop, value, source)))
        return (1 if err else 0), '\n'.join(out) + '\n', err

    def _below(self, root, depth):
        """root and its descendents down to depth levels (-1: all), snapshots one level below their dataset."""

        def level(name):
            rest = name[len(root) :]
            return rest.count('/') + rest.count('@')

        return sorted(
            n
            for n in self.datasets
            if n == root or (n.startswith((root + '/', root + '@')) and (depth < 0 or level(n) <= depth))
        )

    def _create(self, args):
        name, kind, local = args[-1], 'filesystem', {}
        for i, arg in enumerate(args[:-1]):
            if arg == '-V':
                kind, local['volsize'] = 'volume', args[i + 1]
            elif arg == '-o':
                key, value = args[i + 1].split('=', 1)
                local[key] = value
        self.add(name, kind)
        for key, value in local.items():
            self.datasets[name][key] = [value, 'local']
        return 0, '', ''

    def _set(self, args):
        for pair in args[:-1]:
            key, value = pair.split('=', 1)
            self.datasets[args[-1]][key] = [value, 'local']
        return 0, '', ''

    def _inherit(self, args):
        self.datasets[args[-1]][args[0]] = [CAPTURED.get(args[0], ('-', '-'))[0], 'default']
        return 0, '', ''

    def _list(self, args):
        root = args[-1]
        if root not in self.datasets:
            return self._missing(root)
        return 0, ''.join('%s\t-\n' % n for n in self._below(root, -1)), ''

    def _destroy(self, args):
        root = args[-1]
        for name in [n for n in self.datasets if n == root or n.startswith((root + '/', root + '@'))]:
            del self.datasets[name]
        return 0, '', ''

    def _allow(self, args):
        """Reads answer self.grants[name], the text `zfs allow name` printed; writes are only recorded."""
        if len(args) > 1:
            return 0, '', ''
        if args[0] not in self.datasets:
            return self._missing(args[0])
        return 0, self.grants.get(args[0], ''), ''
