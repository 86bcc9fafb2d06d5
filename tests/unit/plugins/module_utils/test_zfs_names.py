import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_names import dataset_name_error, is_under


@pytest.mark.parametrize('name', ['tank', 'tank/nomad/csi', 'tank/a_b-c.d:e', 'p1/x'])
def test_valid(name):
    assert dataset_name_error(name) is None


@pytest.mark.parametrize(
    'name,fragment',
    [
        ('tank//x', 'empty component'),
        ('tank/a b', 'may only contain'),
        ('../', "start or end with '/'"),
        ('/tank/x', "start or end with '/'"),
        ('tank/../x', "'..' component"),
        ('tank/x@snap', 'snapshot'),
        ('1tank/x', 'must start with a letter'),
        ('mirror1/x', 'reserved'),
        ('', 'non-empty'),
        ('tank/' + 'x' * 300, 'longer than'),
        ('tank/a;rm -rf x', 'may only contain'),
    ],
)
def test_invalid(name, fragment):
    assert fragment in dataset_name_error(name)


def test_is_under():
    assert is_under('tank/a/b', 'tank/a')
    assert not is_under('tank/ab', 'tank/a')
    assert not is_under('tank/a', 'tank/a')
    assert is_under('tank/a', 'tank/a', allow_equal=True)
