package domain

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Token names used in role-extraction reports.
const (
	TokenID     = "id_token"
	TokenAccess = "access_token"
	// TokenUserinfo and TokenIntrospection are the answers of the
	// provider's userinfo and introspection endpoints (generic providers).
	TokenUserinfo      = "userinfo"
	TokenIntrospection = "introspection"
)

// Claims is a decoded JWT payload. Values have the types encoding/json gives
// them (map[string]any, []any, string, float64, bool); anything else is
// treated as a wrong type, never asserted blindly.
type Claims map[string]any

// RoleFinding is one role name seen in a token, and what became of it.
type RoleFinding struct {
	Token string // TokenID or TokenAccess
	Claim string // "realm_access.roles" or "resource_access.<clientId>.roles"
	Name  string // as the token carries it
	// Role is the recognised role; empty when the name was dropped.
	Role Role
	// Dropped says why a name was not kept; empty when it was kept.
	Dropped string
}

// RoleExtraction is the result of ExtractRoles with everything needed to
// explain it (agentauth oidc check prints it).
type RoleExtraction struct {
	Roles []Role
	// Source is the token the roles were taken from, or "default" when the
	// user got USER because no known role remained.
	Source   string
	Findings []RoleFinding
	// Ignored lists claims that were present but unusable (wrong type, or a
	// resource_access entry for another client).
	Ignored []string
}

// ExtractRoles applies the specification's four steps:
//
//  1. take roles from realm_access.roles and resource_access.<clientID>.roles
//     of the id_token;
//  2. if the id_token contains no roles, take them from the access_token;
//  3. upper-case the names (ASCII only) and keep the known ones: ADMIN, USER,
//     LEAD, AUDITOR;
//  4. if no known role remains, the user gets USER.
//
// roleMap, when not empty, maps exact provider names to roles before step 3
// (auth.oidc.roleMap); a mapped name must still be one of the four.
// "Contains no roles" means neither claim holds a role string: an id_token
// carrying only unknown names does not fall back to the access token.
func ExtractRoles(idToken, accessToken Claims, clientID string, roleMap map[string]Role) RoleExtraction {
	return ExtractRolesFrom([]ClaimSource{{TokenID, idToken}, {TokenAccess, accessToken}}, "", clientID, roleMap)
}

// ExtractRolesAt is ExtractRoles for a provider that says where its roles
// are (auth.oidc.rolesClaim): steps 1 and 2 read the string array (or
// single string) at the dotted path claim, such as "groups" or
// "resource_access.agent-service.roles", instead of Keycloak's two claims;
// steps 3 and 4 are the same.
func ExtractRolesAt(idToken, accessToken Claims, claim string, roleMap map[string]Role) RoleExtraction {
	return ExtractRolesFrom([]ClaimSource{{TokenID, idToken}, {TokenAccess, accessToken}}, claim, "", roleMap)
}

// ClaimSource is one set of claims roles may come from, named for the
// report (TokenID, TokenUserinfo, TokenAccess, TokenIntrospection).
type ClaimSource struct {
	Token  string
	Claims Claims
}

// ExtractRolesFrom generalises steps 1 and 2 to any number of sources: the
// roles are those of the first source holding a role name, read at the
// dotted path claim, or with claim empty in Keycloak's realm_access and
// resource_access.<clientID>; steps 3 and 4 follow. A nil source is
// skipped.
func ExtractRolesFrom(sources []ClaimSource, claim, clientID string, roleMap map[string]Role) RoleExtraction {
	var ex RoleExtraction
	var names []RoleFinding
	source := TokenID
	for _, s := range sources {
		if s.Claims == nil {
			continue
		}
		if claim == "" {
			names = ex.collect(s.Token, s.Claims, clientID)
		} else {
			names = ex.collectAt(s.Token, s.Claims, claim)
		}
		source = s.Token
		if len(names) > 0 {
			break
		}
	}
	ex.recognise(names, source, roleMap)
	return ex
}

// collectAt reads the role names at the dotted path claim of claims.
func (ex *RoleExtraction) collectAt(token string, claims Claims, claim string) []RoleFinding {
	var v any = map[string]any(claims)
	for _, seg := range strings.Split(claim, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				ex.Ignored = append(ex.Ignored, token+" "+claim+": a part of the path is not an object")
			}
			return nil
		}
		if v, ok = obj[seg]; !ok {
			return nil
		}
	}
	var list []any
	switch x := v.(type) {
	case string:
		list = []any{x}
	case []any:
		list = x
	default:
		ex.Ignored = append(ex.Ignored, token+" "+claim+": not an array of strings")
		return nil
	}
	var out []RoleFinding
	for _, e := range list {
		name, ok := e.(string)
		if !ok {
			ex.Ignored = append(ex.Ignored, token+" "+claim+": an entry is not a string")
			continue
		}
		out = append(out, RoleFinding{Token: token, Claim: claim, Name: name})
	}
	return out
}

// recognise applies steps 3 and 4 to the names found in source.
func (ex *RoleExtraction) recognise(names []RoleFinding, source string, roleMap map[string]Role) {
	for _, f := range names {
		f.Role, f.Dropped = recognise(f.Name, roleMap)
		if f.Role != "" && !slices.Contains(ex.Roles, f.Role) {
			ex.Roles = append(ex.Roles, f.Role)
		}
		ex.Findings = append(ex.Findings, f)
	}
	ex.Source = source
	if len(ex.Roles) == 0 {
		ex.Roles = []Role{RoleUser}
		ex.Source = "default"
	}
}

func (ex *RoleExtraction) collect(token string, claims Claims, clientID string) []RoleFinding {
	if claims == nil {
		return nil
	}
	var out []RoleFinding
	add := func(claim string, holder any, present bool) {
		if !present {
			return
		}
		obj, ok := holder.(map[string]any)
		if !ok {
			ex.Ignored = append(ex.Ignored, token+" "+claim+": not an object")
			return
		}
		raw, present := obj["roles"]
		if !present {
			return
		}
		list, ok := raw.([]any)
		if !ok {
			ex.Ignored = append(ex.Ignored, token+" "+claim+".roles: not an array")
			return
		}
		for _, v := range list {
			name, ok := v.(string)
			if !ok {
				ex.Ignored = append(ex.Ignored, token+" "+claim+".roles: an entry is not a string")
				continue
			}
			out = append(out, RoleFinding{Token: token, Claim: claim + ".roles", Name: name})
		}
	}
	realm, present := claims["realm_access"]
	add("realm_access", realm, present)

	if ra, present := claims["resource_access"]; present {
		clients, ok := ra.(map[string]any)
		if !ok {
			ex.Ignored = append(ex.Ignored, token+" resource_access: not an object")
			return out
		}
		for _, key := range slices.Sorted(maps.Keys(clients)) {
			if key != clientID {
				ex.Ignored = append(ex.Ignored, token+" resource_access."+key+": not our client id "+strconv.Quote(clientID))
			}
		}
		own, present := clients[clientID]
		add("resource_access."+clientID, own, present && clientID != "")
	}
	return out
}

// recognise maps a provider's role name to a built-in role, or says why not.
func recognise(name string, roleMap map[string]Role) (Role, string) {
	if mapped, ok := roleMap[name]; ok {
		if mapped.IsBuiltin() {
			return mapped, ""
		}
		return "", "roleMap maps it to " + strconv.Quote(string(mapped)) + ", not one of ADMIN, USER, LEAD, AUDITOR"
	}
	r := Role(asciiUpper(name))
	if r.IsBuiltin() {
		return r, ""
	}
	return "", "not one of admin, user, lead, auditor (after upper-casing)"
}

// asciiUpper upper-cases a-z only, so that look-alikes such as "admın"
// (dotless i) never turn into a known role through Unicode case folding.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}
