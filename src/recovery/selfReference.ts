/**
 * The name under which a stack program reads its own outputs (a StackReference to itself: docs/upstream.md#pulumi-self-reference).
 * The cloud backend needs `<organization>/<project>/<stack>`; the DIY backend, whose organization is always
 * `organization`, takes that form only in its project layout and refuses it in its legacy one, while the bare stack name
 * resolves to the current project in both.
 */

/** DIY backends' organization, as the engine tells the program (none offline, under mocks). */
export const DIY_ORGANIZATION = "organization";

/** The StackReference name of the running stack, given what `pulumi.getOrganization()` (undefined when it throws), `getProject()` and `getStack()` say. */
export function ownStackReferenceName(organization: string | undefined, project: string, stack: string): string {
    return !organization || organization === DIY_ORGANIZATION ? stack : `${organization}/${project}/${stack}`;
}
