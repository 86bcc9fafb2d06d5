from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_cli import parse_get, properties_with_sources
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES


def test_parse_captured_zfs_get():
    props = parse_get((FIXTURES / 'zfs_get_2.3.2.txt').read_text())['tank/fixture/csi']
    assert props['type'] == ('filesystem', '-')
    assert props['quota'] == ('0', 'default')
    shown = properties_with_sources(props)
    assert shown['type'] == {'value': 'filesystem', 'source': 'none'}
    assert shown['compression']['source'] in ('default', 'inherited')


def test_values_with_tabs_and_inherited_source():
    props = parse_get('tank/a\tcom.x:note\ta\tb\tinherited from tank\n')['tank/a']
    assert props['com.x:note'] == ('a\tb', 'inherited from tank')
    assert properties_with_sources(props)['com.x:note'] == {
        'value': 'a\tb',
        'source': 'inherited',
        'inherited_from': 'tank',
    }


def test_typed_values_for_info():
    props = {'used': ('4096', 'none'), 'origin': ('-', '-'), 'compression': ('lz4', 'local')}
    assert properties_with_sources(props, typed=True) == {
        'used': {'value': 4096, 'source': 'none'},
        'origin': {'value': None, 'source': 'none'},
        'compression': {'value': 'lz4', 'source': 'local'},
    }
