package console

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/agentauth/agentauth/app"
	"github.com/agentauth/agentauth/domain"
)

// keyRow is a managed key as the keys page lists it (never its secret).
type keyRow struct {
	domain.APIKey
	Status string
}

type keysData struct {
	Keys []keyRow
	Next string // the cursor of the next page of keys
	// Grantable are the permissions a new key may hold: the caller's own.
	Grantable []domain.Permission
	// Made is the key just made, its secret shown this once.
	Made *app.NewKey
}

func (c *Console) keys(ctx *fiber.Ctx) error {
	return c.renderKeys(ctx, fiber.StatusOK, nil)
}

func (c *Console) renderKeys(ctx *fiber.Ctx, status int, made *app.NewKey) error {
	p := c.principal(ctx)
	list, err := c.uc.Keys.List(ctx.UserContext(), p, app.PageRequest{Limit: pageSize, Cursor: ctx.Query("cursor")})
	if err != nil {
		return err
	}
	now := time.Now()
	d := keysData{Next: list.Next, Grantable: c.uc.Authorizer.Permissions(p.Roles), Made: made}
	var owners []string
	for _, k := range list.Items {
		d.Keys = append(d.Keys, keyRow{k, keyStatus(k, now)})
		owners = append(owners, k.Owner)
	}
	n, err := c.names(ctx, owners, nil)
	if err != nil {
		return err
	}
	return c.renderNamed(ctx, status, "keys", "API keys", d, n)
}

func keyStatus(k domain.APIKey, now time.Time) string {
	switch {
	case !k.RevokedAt.IsZero():
		return "revoked"
	case !now.Before(k.ExpiresAt):
		return "expired"
	}
	return "active"
}

// createKey makes a key through the same use case as POST /api/v2/keys and
// answers the page itself (no redirect), so the secret is shown once and
// never travels in a URL.
func (c *Console) createKey(ctx *fiber.Ctx) error {
	days, err := strconv.Atoi(ctx.FormValue("days"))
	if err != nil || days < 1 {
		return fmt.Errorf("expires in: a whole number of days of at least 1: %w", domain.ErrInvalidInput)
	}
	var perms []domain.Permission
	for _, v := range ctx.Request().PostArgs().PeekMulti("permissions") {
		perms = append(perms, domain.Permission(v))
	}
	k, err := c.uc.Keys.Create(ctx.UserContext(), c.principal(ctx), app.KeyRequest{
		Name: ctx.FormValue("name"), Permissions: perms, Projects: list(ctx.FormValue("projects")),
		Tools: list(ctx.FormValue("tools")), ExpiresAt: time.Now().Add(time.Duration(days) * 24 * time.Hour),
		ServiceAccount: ctx.FormValue("service_account")})
	if err != nil {
		return err
	}
	return c.renderKeys(ctx, fiber.StatusCreated, &k)
}

func (c *Console) revokeKey(ctx *fiber.Ctx) error {
	id := ctx.Params("id")
	confirmed, err := c.uc.Keys.Revoke(ctx.UserContext(), c.principal(ctx), id)
	if err != nil {
		return err
	}
	outcome := "key " + id + " revoked"
	if !confirmed {
		outcome += " (not yet confirmed by every instance)"
	}
	return c.done(ctx, "/console/keys", outcome)
}
