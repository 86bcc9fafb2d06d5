"""nomad_variable against the stack's Nomad: secrets stay out of output, CAS writes, check and diff mode."""

SECRET = 'ssh-ed25519-PRIVATE-do-not-print-4242'


def test_create_check_update_remove_without_showing_values(run_local, stack):
    path = 'nomad/jobs/it-var'
    checked = run_local('nomad_variable', {'path': path, 'items': {'key': SECRET}}, check=True, diff=True)
    assert checked['changed'] and checked['changed_keys'] == ['key']
    assert stack.nomad('var', 'get', path, check=False).returncode != 0  # check mode wrote nothing

    made = run_local('nomad_variable', {'path': path, 'items': {'key': SECRET}}, diff=True)
    assert made['changed'] and made['item_keys'] == ['key'] and made['modify_index'] > 0
    assert '+    "key": "<hidden, after>"' in made.output, made.output
    assert stack.get('/v1/var/' + path)['Items'] == {'key': SECRET}

    same = run_local('nomad_variable', {'path': path, 'items': {'key': SECRET}})
    assert same['changed'] is False and same['modify_index'] == made['modify_index']

    rotated = run_local('nomad_variable', {'path': path, 'items': {'key': SECRET + '-2', 'other': 'x'}}, diff=True)
    assert rotated['changed'] and rotated['changed_keys'] == ['key', 'other']

    gone = run_local('nomad_variable', {'path': path, 'state': 'absent'})
    assert gone['changed'] and stack.nomad('var', 'get', path, check=False).returncode != 0
    for result in (checked, made, same, rotated, gone):
        assert SECRET not in result.output and SECRET not in str(dict(result))


def test_bad_path_is_refused_before_any_call(run_local):
    result = run_local('nomad_variable', {'path': 'bad path!', 'items': {'key': 'a-long-secret'}})
    assert result.failed and "path 'bad path!' is not a Nomad variable path" in result['msg']
