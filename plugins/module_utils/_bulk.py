# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""The many-volumes form that the volume modules share: items checked as the one-volume options before any call,
and one result for them all."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError


def refuse_single_options(params, options, key, shared=()):
    """A one-volume option beside volumes or spec_file is a mistake: it would apply to no item, or to all."""
    for field, spec in options.items():
        if field != key and field not in shared and params[field] != spec.get('default'):
            raise PlanError(
                '%s is an option of one volume (%s); with volumes or spec_file give it in each item.' % (field, key)
            )


def read_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (IOError, OSError, ValueError) as e:
        raise PlanError('spec_file %s: %s; give the %s JSON that the zfs_csi pack renders.' % (path, e, what))


def validated_items(raw, options, key, no_log_values):
    """[(label, item)] each checked against options, as the one-volume form's argument spec would; the first bad item
    or a key given twice raises PlanError naming it. key is the field that names a volume, or a tuple of the fields
    that do together.

    The values of the items' no_log options join no_log_values (the module's, which Ansible masks in every result)
    before anything can show them, in an error or in the result, also for items that came from a file.
    """
    validator, seen, out = ArgumentSpecValidator(options), set(), []
    for label, item in raw:
        validated = validator.validate(item)
        no_log_values.update(validated._no_log_values)
        if validated.error_messages:
            raise PlanError(label + ' '.join(validated.error_messages))
        item = validated.validated_parameters
        keys = key if isinstance(key, tuple) else (key,)
        identity = tuple(item[k] for k in keys)
        if identity in seen:
            named = ' '.join('%s %s' % (k, item[k]) for k in keys if item[k] is not None)
            raise PlanError('%s%s is given twice; give each volume once.' % (label, named))
        seen.add(identity)
        out.append((label, item))
    return out


def bulk_result(entries, diff):
    """One result for many volumes from [(name, entry, plan)], each entry with its own changed and fields."""
    before, after = {}, {}
    for name, _entry, plan in entries:
        if plan.steps:
            before[name], after[name] = plan.before, plan.after
    results = [entry for _name, entry, _plan in entries]
    result = dict(
        changed=any(r['changed'] for r in results),
        changed_fields=sorted(set(f for r in results for f in r['changed_fields'])),
        volumes=results,
    )
    if diff:
        result['diff'] = dict(before=before, after=after)
    return result
