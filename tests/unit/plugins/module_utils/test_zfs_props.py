import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_props import (
    PropertyError,
    normalize_properties,
    normalize_value,
    parse_size,
    values_equal,
)

G = 1024**3


@pytest.mark.parametrize(
    'text,expected',
    [
        ('10G', 10 * G),
        ('10GiB', 10 * G),
        ('10gb', 10 * G),
        ('1.5T', int(1.5 * 1024**4)),
        ('10737418240', 10 * G),
        ('4k', 4096),
        ('512', 512),
        ('128K', 131072),
        (131072, 131072),
        ('1 M', 1024**2),
    ],
)
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize('text', ['12XB', '-1G', '', 'G', '1.5', '1e3', '10 GB GB', '99999E'])
def test_bad_sizes(text):
    with pytest.raises(PropertyError):
        parse_size(text)


def test_none_is_zero_for_quotas_only():
    assert normalize_value('quota', 'none') == '0'
    assert normalize_value('refreservation', 'none') == '0'
    with pytest.raises(PropertyError, match="cannot be 'none'"):
        normalize_value('volsize', 'none')


def test_booleans_aliases_and_duplicates():
    assert normalize_properties({'compress': True, 'atime': False, 'recsize': '1M'}) == {
        'compression': 'on',
        'atime': 'off',
        'recordsize': str(1024**2),
    }
    with pytest.raises(PropertyError, match='given twice'):
        normalize_properties({'compress': 'lz4', 'compression': 'zstd'})


@pytest.mark.parametrize(
    'props,message',
    [
        ({'used': '1G'}, 'read-only'),
        ({'Bad-Name': 'x'}, 'not a ZFS property name'),
        ({'com.example:x': 'a\nb'}, 'newline'),
        ({'quota': [1]}, 'must be a scalar'),
        ({'com.example:x': None}, 'use inherit'),
    ],
)
def test_rejected_properties(props, message):
    with pytest.raises(PropertyError, match=message):
        normalize_properties(props)


def test_encryption_on_matches_any_cipher():
    assert values_equal('encryption', 'on', 'aes-256-gcm')
    assert not values_equal('encryption', 'on', 'off')
    assert not values_equal('compression', 'on', 'lz4')
